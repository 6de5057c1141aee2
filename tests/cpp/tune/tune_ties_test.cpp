// tune's exact ties (breaker5 F19): plans of equal score are ordered by their number of changes
// from the config as written, so an equal plan never displaces the config (or a plan nearer to
// it); of plans with the same programs the one nearer the config is the candidate kept.
#include <gtest/gtest.h>

#include <functional>

#include "ppstream/config/config.h"
#include "ppstream/tune/tune.h"
#include "small_config.h"
#include "tune/scoring.h"

namespace ppstream::tune {
namespace {

// The small job as written: 1f1b, reduce_grad inline.
PipelineConfig small() { return testing_small::small_config(5, /*stash=*/false); }

// Every trial of a plan takes base(config) ms.
class FlatScoring : public tune_detail::Scoring {
 public:
  explicit FlatScoring(double base) : base_(base) {}
  sim::TrialStats extend(int32_t trials) override {
    while (static_cast<int32_t>(steps_.size()) < trials) steps_.push_back(base_);
    return tune_detail::stats_of(steps_, trials);
  }
  int32_t trials() const override { return static_cast<int32_t>(steps_.size()); }
  double peak_memory_bytes() const override { return 0; }
  std::vector<double> peak_per_rank_trial0() const override { return {0, 0}; }

 private:
  double base_;
  std::vector<double> steps_;
};

TuneReport search_with(const std::function<double(const PipelineConfig&)>& base) {
  TuneOptions o;
  o.trials = 3;
  o.min_trials = 1;
  o.show = 4;
  // Points in order: gpipe+inline, gpipe+async, 1f1b+inline (as written), 1f1b+async.
  o.space = {{"schedule", {"gpipe", "1f1b"}}, {"data_parallel.reduce_grad", {"inline", "async"}}};
  return tune_detail::search(small(), o, [&](const PipelineConfig& c) { return std::make_unique<FlatScoring>(base(c)); }, {});
}

std::vector<std::string> labels(const TuneReport& r) {
  std::vector<std::string> out;
  for (const PlanResult& p : r.plans) out.push_back(p.label);
  return out;
}

TEST(TuneTies, AnAllEqualSpaceKeepsTheConfigAsWrittenFirst) {
  const TuneReport r = search_with([](const PipelineConfig&) { return 30.0; });
  ASSERT_EQ(r.plans.size(), 4u);
  EXPECT_EQ(r.plans.front().label, "(as written)");
  EXPECT_TRUE(r.plans.front().settings.empty());
  // Then one change (in space order), then two.
  EXPECT_EQ(labels(r), (std::vector<std::string>{"(as written)", "schedule=gpipe", "data_parallel.reduce_grad=async",
                                                 "schedule=gpipe data_parallel.reduce_grad=async"}));
}

TEST(TuneTies, ATieGoesToTheFewestChanges) {
  // async is 5 ms faster whatever the schedule: the schedule change buys nothing.
  const TuneReport r = search_with([](const PipelineConfig& c) { return c.reduce_grad == ReducePolicy::ASYNC ? 95.0 : 100.0; });
  ASSERT_EQ(r.plans.size(), 4u);
  EXPECT_EQ(labels(r), (std::vector<std::string>{"data_parallel.reduce_grad=async", "schedule=gpipe data_parallel.reduce_grad=async",
                                                 "(as written)", "schedule=gpipe"}));
}

TEST(TuneTies, OfPlansWithTheSameProgramsTheOneNearerTheConfigIsKept) {
  // Under reduce_grad inline sync_last_reduce changes no program: the point `false` (first in
  // the space) and the config as written (`true`) are one plan, kept as the config as written.
  TuneOptions o;
  o.trials = 2;
  o.space = {{"data_parallel.sync_last_reduce", {"false", "true"}}};
  const TuneReport r = tune(small(), o);
  ASSERT_EQ(r.plans.size(), 1u);
  EXPECT_EQ(r.plans.front().label, "(as written)");
  bool logged = false;
  for (const LogEntry& e : r.log)
    if (e.plan == "data_parallel.sync_last_reduce=false") logged = e.outcome == "duplicate of (as written)";
  EXPECT_TRUE(logged);
}

}  // namespace
}  // namespace ppstream::tune
