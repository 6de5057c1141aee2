// tune: the search over a small space (PP2 plain DP with a lognormal reduction tail): the memory
// budget is never exceeded, the best plan's --apply config reproduces its p99 exactly under
// simulate, successive halving prunes, --budget-s stops, and --space is checked.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ppstream/config/config.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/tune/tune.h"
#include "small_config.h"

namespace ppstream::tune {
namespace {

// Stash 1 MiB per layer and microbatch, two layers per stage: GPipe holds 4 stashes (8 MiB),
// 1F1B at most 2 on rank 0 (4 MiB), so a 6 MiB budget leaves GPipe out.
PipelineConfig small() { return testing_small::small_config(3, /*stash=*/true); }

TuneOptions options(int32_t trials) {
  TuneOptions o;
  o.trials = trials;
  o.min_trials = 3;
  o.show = 20;
  o.space = {{"schedule", {"gpipe", "1f1b"}},
             {"data_parallel.reduce_grad", {"inline", "async"}},
             {"data_parallel.sync_last_reduce", {"true", "false"}}};
  return o;
}

TEST(Tune, NeverReturnsAPlanOverTheMemoryBudget) {
  const PipelineConfig cfg = small();
  const TuneReport free_run = tune(cfg, options(9));
  bool some_over = false;
  for (const PlanResult& p : free_run.plans) some_over |= p.peak_memory_bytes > 6.0 * 1048576;
  ASSERT_TRUE(some_over) << "the budget below must bind for this test to mean anything";
  TuneOptions o = options(9);
  o.memory_budget_bytes = 6.0 * 1048576;
  const TuneReport r = tune(cfg, o);
  ASSERT_FALSE(r.plans.empty());
  for (const PlanResult& p : r.plans) {
    EXPECT_LE(p.peak_memory_bytes, 6.0 * 1048576) << p.label;
    EXPECT_FALSE(p.over_budget) << p.label;
  }
  bool logged = false;
  for (const LogEntry& e : r.log) logged |= e.outcome == "over budget";
  EXPECT_TRUE(logged);
}

TEST(Tune, ApplyOutputReproducesTheReportedP99Exactly) {
  const TuneReport r = tune(small(), options(27));
  ASSERT_FALSE(r.plans.empty());
  const PlanResult& best = r.plans.front();
  EXPECT_EQ(best.trials, 27);
  const PipelineConfig applied = load_config_text(best.yaml, "apply");
  sim::SimOptions so;
  so.trials = 27;
  const sim::SimReport rep = sim::simulate(applied, so);
  EXPECT_EQ(rep.runs.at(0).trials.p99_ms, best.p99_ms);
  EXPECT_EQ(rep.runs.at(0).trials.p50_ms, best.p50_ms);
  EXPECT_EQ(rep.runs.at(0).peak_memory_bytes, best.peak_memory_bytes);
  // Best first, and no better than any listed plan.
  for (const PlanResult& p : r.plans) {
    if (p.trials == best.trials) {
      EXPECT_LE(best.score_ms, p.score_ms);
    }
  }
}

TEST(Tune, BaselinesAreTheConfigsPoliciesOverTheSameTrials) {
  const PipelineConfig cfg = small();
  const TuneReport r = tune(cfg, options(9));
  ASSERT_EQ(r.baselines.size(), 3u);
  EXPECT_EQ(r.baselines[0].label, "inline");
  sim::SimOptions so;
  so.trials = 9;
  EXPECT_EQ(sim::simulate(cfg, so).runs.at(0).trials.p99_ms, r.as_written.p99_ms);
  EXPECT_EQ(r.as_written.p99_ms, r.baselines[0].p99_ms);  // the config is inline as written
  // 2 schedules x 2 policies x 2 flags = 8 points; sync_last_reduce does nothing under inline.
  EXPECT_EQ(r.candidates, 8);
  EXPECT_EQ(r.verified, 8);
  EXPECT_EQ(r.evaluated, 6);
}

TEST(Tune, SuccessiveHalvingPrunesAndKeepsTheTrialsCommon) {
  TuneOptions o = options(27);
  o.show = 1;  // keep 1/3 per rung: 6 plans at 3 trials, 2 at 9, 1 at 27
  const TuneReport r = tune(small(), o);
  int pruned = 0;
  for (const LogEntry& e : r.log) pruned += e.outcome == "pruned";
  EXPECT_EQ(pruned, 5);
  EXPECT_EQ(r.simulations, 4 + 6 + 2 + 1);  // 4 baselines (as written + 3) and the rungs
  // Each plan runs each trial once: 4 x 27 for the baselines, then 6 x 3 + 2 x (9 - 3) + (27 - 9).
  EXPECT_EQ(r.trial_runs, 4 * 27 + 6 * 3 + 2 * 6 + 18);
}

TEST(Tune, BudgetStopsTheSearchWithWhatItHas) {
  TuneOptions o = options(9);
  o.budget_s = 1e-9;
  const TuneReport r = tune(small(), o);
  EXPECT_TRUE(r.stopped_by_budget);
  EXPECT_TRUE(r.plans.empty());
}

TEST(Tune, JsonHasThePlansAndCounts) {
  const auto j = nlohmann::json::parse(tune_json(tune(small(), options(9))));
  ASSERT_FALSE(j["plans"].empty());
  for (const char* k : {"settings", "p50_ms", "p99_ms", "mean_ms", "peak_memory_bytes"}) EXPECT_TRUE(j["plans"][0].contains(k)) << k;
  EXPECT_EQ(j["plans"][0]["change_ratio"].size(), 4u);  // as written and the three baselines
  EXPECT_LE(j["plans"][0]["change_ratio"]["inline"].get<double>(), 0.0);  // the best is no worse than a baseline
  EXPECT_EQ(j["evaluated"].get<int>(), 6);
  EXPECT_EQ(j["verified"].get<int>(), 8);
}

TEST(Tune, PlansTheConfigRejectsAreLoggedNotScored) {
  TuneOptions o = options(3);
  o.space = {{"schedule", {"1f1b", "interleaved_1f1b"}}};  // interleaved needs vpp > 1
  const TuneReport r = tune(small(), o);
  EXPECT_EQ(r.candidates, 2);
  EXPECT_EQ(r.verified, 1);
  ASSERT_FALSE(r.log.empty());
  EXPECT_EQ(r.log.front().plan, "schedule=interleaved_1f1b");
  EXPECT_EQ(r.log.front().outcome.rfind("invalid: config:", 0), 0u) << r.log.front().outcome;
  EXPECT_NE(tune_table(r).find("set aside, invalid: 1"), std::string::npos) << tune_table(r);
}

TEST(Tune, SpaceAxesAreChecked) {
  const PipelineConfig cfg = small();
  EXPECT_EQ(parse_dimension("schedule=gpipe,1f1b", cfg).values.size(), 2u);
  EXPECT_THROW(parse_dimension("schedule", cfg), std::invalid_argument);
  EXPECT_THROW(parse_dimension("schedule=gpipe,", cfg), std::invalid_argument);
  EXPECT_THROW(parse_dimension("schedul=gpipe", cfg), std::invalid_argument);
  TuneOptions o = options(9);
  o.trials = 0;
  EXPECT_THROW(tune(cfg, o), std::invalid_argument);
}

}  // namespace
}  // namespace ppstream::tune
