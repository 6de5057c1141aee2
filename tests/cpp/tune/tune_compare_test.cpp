// tune's comparisons when --budget-s stops the search with plans over fewer trials than the
// baselines (breaker fault 1): a plan is compared with the baselines' first `trials` draws (common
// random numbers), the report says over how many, and the --apply output reproduces the plan's
// figures under `simulate --trials <its trials>`. The stop is made deterministic by a fake clock.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ppstream/config/config.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/tune/tune.h"
#include "small_config.h"
#include "tune/scoring.h"

namespace ppstream::tune {
namespace {

// Seed 5: the first 9 trials' p99 is below the 27 trials' (so the prefix matters).
PipelineConfig small() { return testing_small::small_config(5, /*stash=*/false); }

TuneOptions options() {
  TuneOptions o;
  o.trials = 27;
  o.min_trials = 3;  // rungs of 3, 9, 27 trials
  o.show = 5;
  o.space = {{"schedule", {"gpipe", "1f1b"}}, {"data_parallel.reduce_grad", {"inline", "async"}}};
  return o;
}

// Trial t of a plan takes base + t ms (base: gpipe 90, 1f1b 100, async 5 less), and each trial
// run advances the fake clock by 1 s: over fewer trials every plan's p99 is lower, so comparing
// a 9-trial plan with 27-trial baselines flatters it.
class FakeScoring : public tune_detail::Scoring {
 public:
  FakeScoring(const PipelineConfig& c, double& clock)
      : base_((c.schedule == ScheduleKind::GPIPE ? 90.0 : 100.0) - (c.reduce_grad == ReducePolicy::ASYNC ? 5.0 : 0.0)), clock_(clock) {}
  sim::TrialStats extend(int32_t trials) override {
    while (static_cast<int32_t>(steps_.size()) < trials) {
      steps_.push_back(base_ + static_cast<double>(steps_.size()));
      clock_ += 1;
    }
    return tune_detail::stats_of(steps_, trials);
  }
  int32_t trials() const override { return static_cast<int32_t>(steps_.size()); }
  double peak_memory_bytes() const override { return 0; }
  std::vector<double> peak_per_rank_trial0() const override { return {0, 0}; }

 private:
  double base_;
  double& clock_;
  std::vector<double> steps_;
};

TEST(TuneCompare, APlanStoppedEarlyIsComparedOnTheBaselinesFirstTrials) {
  double clock = 0;
  TuneOptions o = options();
  // Baselines: 4 x 27 = 108 trial runs; rung 0: 4 plans x 3 = 120; the first plan of rung 1
  // adds 6 (126): the budget stops the search before the second.
  o.budget_s = 125.5;
  const TuneReport r = tune_detail::search(small(), o, [&](const PipelineConfig& c) { return std::make_unique<FakeScoring>(c, clock); },
                                           [&] { return clock; });
  ASSERT_TRUE(r.stopped_by_budget);
  ASSERT_FALSE(r.plans.empty());
  const PlanResult& best = r.plans.front();
  ASSERT_EQ(best.label, "schedule=gpipe data_parallel.reduce_grad=async");
  ASSERT_EQ(best.trials, 9);
  EXPECT_EQ(best.p99_ms, 85.0 + 8);
  for (const PlanResult& b : r.baselines) EXPECT_EQ(b.trials, 27) << b.label;
  // The same prefix: async's first 9 trials (95 … 103), not its 27 (p99 121).
  const Comparison c = compare(r, best);
  EXPECT_EQ(c.trials, 9);
  EXPECT_EQ(c.best, "async");
  EXPECT_EQ(c.best_score_ms, 95.0 + 8);
  EXPECT_DOUBLE_EQ(c.vs_best, (93.0 - 103.0) / 103.0);
  EXPECT_DOUBLE_EQ(c.vs_as_written, (93.0 - 108.0) / 108.0);
  const auto j = nlohmann::json::parse(tune_json(r));
  EXPECT_EQ(j["plans"][0]["compared_trials"].get<int>(), 9);
  EXPECT_DOUBLE_EQ(j["plans"][0]["change_ratio"]["async"].get<double>(), (93.0 - 103.0) / 103.0);
  EXPECT_DOUBLE_EQ(j["plans"][0]["baseline_score_ms"]["inline"].get<double>(), 108.0);
  EXPECT_EQ(j["best_vs_best_baseline"]["compared_trials"].get<int>(), 9);
  EXPECT_DOUBLE_EQ(j["best_vs_best_baseline"]["change_ratio"].get<double>(), (93.0 - 103.0) / 103.0);
  // A plan over all trials is compared over all of them.
  PlanResult full = best;
  full.trials = 27;
  EXPECT_EQ(compare(r, full).best_score_ms, 95.0 + 26);
  // The table says which trials the comparison used.
  const std::string t = tune_table(r);
  EXPECT_NE(t.find("rows over 9 trials: against the baselines' first 9 trials"), std::string::npos) << t;
  EXPECT_NE(t.find("-9.71%"), std::string::npos) << t;
}

// The real scoring: the stop leaves plan 1 over 9 trials; `simulate --trials 9` of its --apply
// config and of the best baseline give exactly the figures the comparison used.
TEST(TuneCompare, TheComparedFiguresAreWhatSimulateGivesOverThoseTrials) {
  int64_t scorings = 0;
  TuneOptions o = options();
  o.progress = [&](int64_t done, int64_t, const std::string&) { scorings = done; };
  o.budget_s = 8.5;  // 4 baseline scorings, 4 at rung 0, one at rung 1: stop
  const PipelineConfig cfg = small();
  const TuneReport r = tune_detail::search(cfg, o, [](const PipelineConfig& c) { return std::make_unique<tune_detail::PlanScoring>(c); },
                                           [&] { return static_cast<double>(scorings); });
  ASSERT_TRUE(r.stopped_by_budget);
  ASSERT_FALSE(r.plans.empty());
  const PlanResult& best = r.plans.front();
  ASSERT_EQ(best.trials, 9);
  sim::SimOptions so;
  so.trials = 9;
  EXPECT_EQ(sim::simulate(load_config_text(best.yaml, "apply"), so).runs.at(0).trials.p99_ms, best.p99_ms);
  const Comparison c = compare(r, best);
  ASSERT_FALSE(c.best.empty());
  PipelineConfig b = cfg;
  for (const PlanResult& p : r.baselines)
    if (p.label == c.best) apply_overrides(b, p.settings);
  EXPECT_EQ(sim::simulate(b, so).runs.at(0).trials.p99_ms, c.best_score_ms);
  EXPECT_EQ(sim::simulate(cfg, so).runs.at(0).trials.p99_ms, c.baseline_score_ms.front().second);
  // The prefix matters here: over all 27 trials the baselines' p99 is higher.
  EXPECT_LT(c.baseline_score_ms.front().second, r.as_written.p99_ms);
  for (const PlanResult& p : r.baselines)
    if (p.label == c.best) {
      EXPECT_LT(c.best_score_ms, p.p99_ms);
    }
}

}  // namespace
}  // namespace ppstream::tune
