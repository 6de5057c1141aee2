// The trial runner (sim/trials.h): a compiled plan reused across draws gives what a fresh
// simulate gives, threads give the serial result exactly, and errors come back from workers.
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <stdexcept>

#include "ppstream/config/config.h"
#include "ppstream/sim/memory_trials.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/sim/trials.h"
#include "small_configs.h"

namespace ppstream::sim {
namespace {

// Cluster mode (world 32) with a lognormal tail on every reduction: each draw differs.
PipelineConfig drawn(const std::string& link_sharing = "dedicated") {
  return load_config_text(fixtures::interleaved_hsdp(2, 4, "async") + R"(
cost: {forward_ms_per_layer: 1, backward_ms_per_layer: 2, grad_bytes_per_layer: 1.0e8, replicate_bandwidth_gb_per_s: 10,
       p2p_latency_ms: 0.1, activation_bytes: 1.0e8, p2p_bandwidth_gb_per_s: 10, link_sharing: )" + link_sharing + R"(}
straggler: {seed: 3, distribution: {kind: lognormal, median_ms: 3, sigma: 1.0}}
)",
                          "test");
}

TEST(SimTrials, ThreadsGiveTheSerialStepTimesExactly) {
  for (const char* sharing : {"dedicated", "fair"}) {
    const PipelineConfig cfg = drawn(sharing);
    const CompiledPlan plan(cfg, ReducePolicy::NONE, true);
    const TrialSetup setup = trial_setup(cfg, plan.world());
    TrialRunOptions serial, two, many;
    serial.threads = 1;
    two.threads = 2;
    many.threads = 5;
    const std::vector<double> a = trial_step_times(plan, setup, 0, 8, serial);
    ASSERT_EQ(a.size(), 8u);
    EXPECT_NE(a[0], a[1]) << "the draws must differ for this test to mean anything";
    EXPECT_EQ(trial_step_times(plan, setup, 0, 8, two), a) << sharing;
    EXPECT_EQ(trial_step_times(plan, setup, 0, 8, many), a) << sharing;
    // A window of draws is the same draws: trial k does not depend on where the window starts.
    const std::vector<double> tail = trial_step_times(plan, setup, 5, 3, two);
    EXPECT_EQ(tail, std::vector<double>(a.begin() + 5, a.end())) << sharing;
  }
}

TEST(SimTrials, ReusedPlanMatchesSimulateAndItsTrialZero) {
  const PipelineConfig cfg = drawn();
  SimOptions o;
  o.cluster = true;
  o.trials = 6;
  o.threads = 1;
  const SimReport serial = simulate(cfg, o);
  o.threads = 2;
  const SimReport parallel = simulate(cfg, o);
  EXPECT_EQ(serial.runs.at(0).trials.step_time_ms, parallel.runs.at(0).trials.step_time_ms);
  const CompiledPlan plan(cfg, ReducePolicy::NONE, true);
  const TrialSetup setup = trial_setup(cfg, plan.world());
  EXPECT_EQ(trial_step_times(plan, setup, 0, 6), serial.runs.at(0).trials.step_time_ms);
  SimCostModel model = trial_cost_model(plan, setup, 0);
  EXPECT_EQ(run_trial(plan, model, setup.platform).makespan_ms, serial.runs.at(0).metrics.step_time_ms);
}

// The runner turns one model into the next draw's (SimCostModel::with_straggler, sharing the
// duration table): each trial must equal a run with a model built afresh for that draw, in
// cluster mode and in the one-replica set (whose outside members are drawn per trial).
TEST(SimTrials, EachDrawEqualsARunWithItsOwnFreshModel) {
  const PipelineConfig cfg = drawn();
  for (const bool cluster : {true, false}) {
    const CompiledPlan plan(cfg, ReducePolicy::NONE, cluster);
    const TrialSetup setup = trial_setup(cfg, plan.world());
    const std::vector<double> got = trial_step_times(plan, setup, 2, 4);
    ASSERT_EQ(got.size(), 4u);
    EXPECT_NE(got[0], got[1]) << "the draws must differ for this test to mean anything";
    for (uint64_t k = 0; k < 4; ++k) {
      SimCostModel fresh = trial_cost_model(plan, setup, 2 + k);
      EXPECT_EQ(got[k], run_trial(plan, fresh, setup.platform).makespan_ms) << "cluster " << cluster << " trial " << 2 + k;
    }
  }
}

// Fixed tails and no distribution: every draw is trial 0's, so one run serves every index
// (sim/trials.h draws_differ), and progress still counts each trial.
TEST(SimTrials, FixedTailsGiveEveryTrialTheFirstDrawsFigures) {
  const PipelineConfig cfg = load_config_text(fixtures::interleaved_hsdp(2, 4, "async") + R"(
cost: {forward_ms_per_layer: 1, backward_ms_per_layer: 2, grad_bytes_per_layer: 1.0e8, replicate_bandwidth_gb_per_s: 10}
straggler: {tails: [{ranks: [5], delay_ms: 40}]}
)",
                                              "test");
  const CompiledPlan plan(cfg, ReducePolicy::NONE, true);
  const TrialSetup setup = trial_setup(cfg, plan.world());
  EXPECT_FALSE(draws_differ(setup));
  SimCostModel first = trial_cost_model(plan, setup, 0);
  const double ms = run_trial(plan, first, setup.platform).makespan_ms;
  TrialRunOptions o;
  int64_t calls = 0;
  o.progress = [&](int64_t, int64_t) { ++calls; };
  EXPECT_EQ(trial_step_times(plan, setup, 0, 5, o), std::vector<double>(5, ms));
  EXPECT_EQ(calls, 5);
  // One draw on dedicated links is one engine run: neither runner records a tape nothing replays.
  const CompiledPlan fresh(cfg, ReducePolicy::NONE, true);
  const TrialFigures f = trial_figures(fresh, setup, MemorySpec{}, 0, 5, {});
  EXPECT_EQ(f.step_time_ms, std::vector<double>(5, ms));
  EXPECT_EQ(fresh.tape(setup.platform), nullptr);
  EXPECT_EQ(trial_engine(setup), TrialEngine::ENGINE);
  TrialSetup drawn_setup = setup;
  drawn_setup.straggler.distribution = DelayDistribution::EXPONENTIAL;
  EXPECT_TRUE(draws_differ(drawn_setup));
}

TEST(SimTrials, ProgressCountsEveryTrialOnce) {
  const PipelineConfig cfg = drawn();
  const CompiledPlan plan(cfg, ReducePolicy::NONE, false);
  const TrialSetup setup = trial_setup(cfg, plan.world());
  TrialRunOptions o;
  o.threads = 2;
  int64_t calls = 0, last = 0;
  o.progress = [&](int64_t done, int64_t total) {
    ++calls;
    last = done;
    EXPECT_EQ(total, 4);
  };
  trial_step_times(plan, setup, 0, 4, o);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(last, 4);
}

TEST(SimTrials, ParallelForRunsEachIndexOnceAndRethrowsTheLowestFailure) {
  std::vector<std::atomic<int>> hits(50);
  parallel_for(50, 2, [&](int64_t k) { ++hits[static_cast<size_t>(k)]; });
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
  try {
    parallel_for(20, 2, [](int64_t k) {
      if (k == 3 || k == 4) throw std::invalid_argument("fail " + std::to_string(k));
    });
    FAIL() << "expected a rethrow";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "fail 3");
  }
}

// The plan's tape (TrialEngine::TAPE, the default) against an engine run per trial
// (TrialEngine::ENGINE): every draw's timings bit-equal, link sharing's second run included, on
// every timed profile; and trial_step_times (which replays) gives the engine's step times.
TEST(SimTrials, TapeReplaysGiveTheEnginesTimingsBitEqual) {
  for (const char* sharing : {"dedicated", "fair", "reduce_priority"}) {
    const PipelineConfig cfg = drawn(sharing);
    const CompiledPlan plan(cfg, ReducePolicy::NONE, true);
    for (PlatformKind k : {PlatformKind::ASCEND_MINDSPORE, PlatformKind::ASCEND_ONE_COMM_STREAM, PlatformKind::CPU_SERIAL,
                           PlatformKind::CPU_MCCL, PlatformKind::STRICT_TIMED}) {
      TrialSetup setup = trial_setup(cfg, plan.world());
      setup.platform = k;
      std::vector<double> engine_ms;
      for (uint64_t trial = 0; trial < 4; ++trial) {
        SimCostModel a = trial_cost_model(plan, setup, trial), b = trial_cost_model(plan, setup, trial);
        const EngineResult want = run_trial(plan, a, k, nullptr, TrialEngine::ENGINE);
        const EngineResult got = run_trial(plan, b, k, nullptr, TrialEngine::TAPE);
        ASSERT_TRUE(want.completed);
        ASSERT_EQ(want.timing.size(), got.timing.size());
        EXPECT_EQ(std::bit_cast<uint64_t>(want.makespan_ms), std::bit_cast<uint64_t>(got.makespan_ms)) << sharing;
        for (size_t p = 0; p < want.timing.size(); ++p)
          for (size_t i = 0; i < want.timing[p].size(); ++i) {
            const InstrTiming& x = want.timing[p][i];
            const InstrTiming& y = got.timing[p][i];
            ASSERT_TRUE(x.issue_ms == y.issue_ms && x.ready_ms == y.ready_ms && x.start_ms == y.start_ms &&
                        x.end_ms == y.end_ms)
                << sharing << " " << to_string(k) << " trial " << trial << " program " << p << " #" << i << ": end "
                << x.end_ms << " vs " << y.end_ms;
          }
        engine_ms.push_back(want.makespan_ms);
      }
      EXPECT_NE(engine_ms[0], engine_ms[1]) << "the draws must differ for this test to mean anything";
      TrialRunOptions two;
      two.threads = 2;
      EXPECT_EQ(trial_step_times(plan, setup, 0, 4, two), engine_ms) << sharing << " " << to_string(k);
    }
  }
}

TEST(SimTrials, StrictPlatformIsRefused) {
  const PipelineConfig cfg = drawn();
  const CompiledPlan plan(cfg, ReducePolicy::NONE, false);
  TrialSetup setup = trial_setup(cfg, plan.world());
  setup.platform = PlatformKind::STRICT;
  EXPECT_THROW(trial_step_times(plan, setup, 0, 2), std::invalid_argument);
}

}  // namespace
}  // namespace ppstream::sim
