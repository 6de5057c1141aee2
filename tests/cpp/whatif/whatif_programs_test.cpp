// The stream-program path of `ppstream whatif` (docs/whatif.md "Our traces"): a simulator trace
// lifted into the programs of its config, re-simulated with its measured costs, attributed, and
// re-placed by the compiler's place-reductions pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "../analyze/util.h"
#include "ppstream/analyze/trace_writer.h"
#include "ppstream/config/config.h"
#include "ppstream/lower/lower.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/sim/trace.h"
#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {
namespace {
using analyze::testing::temp_dir;

std::string example(const std::string& name) { return std::string(PPSTREAM_SOURCE_DIR) + "/examples/" + name; }

// simulate --cluster --trace-every-rank --reduce-grad POLICY --trace PATH; returns the step time.
double simulate_to(const PipelineConfig& cfg, ReducePolicy policy, const std::string& path, bool every_rank = true) {
  sim::SimOptions o;
  o.policies = {policy};
  o.cluster = true;
  o.trace_every_rank = every_rank;
  o.trace_path = path;
  return sim::simulate(cfg, o).runs.at(0).metrics.step_time_ms;
}

std::string read(const std::string& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::pair<double, std::string>> ranked(const Attribution& a) {
  std::vector<std::pair<double, std::string>> v;
  for (const auto& [k, s] : a) v.emplace_back(s, k);
  std::sort(v.rbegin(), v.rend());
  return v;
}

// The 64-rank bullet: the seed's layout at HSDP 4 x 4 with a tail on one member of PP
// ranks 2 and 3; the inline trace's what-if names those two workers and predicts async within 1 %.
TEST(WhatIfPrograms, SeedLayout64NamesTheTailedMembersAndPredictsAsync) {
  const PipelineConfig cfg = load_config_file(example("seed-pp4-vpp2-hsdp-64.yaml"));
  const auto dir = temp_dir("whatif_seed64");
  const std::string trace = (dir / "seed64.inline.json").string();
  const double inline_ms = simulate_to(cfg, ReducePolicy::INLINE, trace);
  const double async_ms = simulate_to(cfg, ReducePolicy::ASYNC, (dir / "seed64.async.json").string(), false);
  ASSERT_TRUE(is_ppstream_trace(trace));
  WhatIfOptions o;
  o.reduce_grad = ReducePolicy::ASYNC;
  const WhatIfResult r = analyze_ppstream_trace(trace, o);
  EXPECT_EQ(r.dp, 16);
  EXPECT_EQ(r.pp, 4);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_NEAR(r.steps[0].measured_ms, inline_ms, 1e-6 * inline_ms);
  EXPECT_LT(r.max_resim_error, 1e-6);  // the lifted programs give the trace's step back
  EXPECT_GT(r.slowdown, 1.03);
  ASSERT_TRUE(r.attributed);
  const auto w = ranked(r.by_worker);
  ASSERT_GE(w.size(), 3u);
  // The tails: dp_index 9 of PP rank 2 and dp_index 14 of PP rank 3, and nobody else costs as much.
  std::vector<std::string> top = {w[0].second, w[1].second};
  std::sort(top.begin(), top.end());
  EXPECT_EQ(top, (std::vector<std::string>{"14,3", "9,2"}));
  EXPECT_GT(w[1].first, w[2].first + 0.01);
  EXPECT_GT(r.by_stage.at("2"), r.by_stage.at("0"));
  EXPECT_GT(r.by_op_type.at("REDUCE_GRAD"), r.by_op_type.at("F"));
  ASSERT_TRUE(r.predicted);
  EXPECT_EQ(r.predicted->policy, "async");
  EXPECT_LT(async_ms, inline_ms);
  EXPECT_NEAR(r.predicted->measured_costs_ms, async_ms, 0.01 * async_ms);
}

// Going back: an async trace with --reduce-grad inline predicts simulate's inline step.
TEST(WhatIfPrograms, AsyncTraceInlinePredictionMatchesSimulate) {
  // The same layout at HSDP 2 x 2 (16 ranks), tails on dp_index 3 of PP rank 2 and 2 of PP rank 3.
  std::string text = read(example("seed-pp4-vpp2-hsdp-64.yaml"));
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"shard_size: 4 ", "shard_size: 2 "}, {"replicate_size: 4 ", "replicate_size: 2 "},
           {"dp_index: 9,", "dp_index: 3,"}, {"dp_index: 14,", "dp_index: 2,"}}) {
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  }
  const PipelineConfig cfg = load_config_text(text, "hsdp-2x2");
  const auto dir = temp_dir("whatif_async_back");
  const std::string trace = (dir / "t.async.json").string();
  simulate_to(cfg, ReducePolicy::ASYNC, trace);
  const double inline_ms = simulate_to(cfg, ReducePolicy::INLINE, (dir / "t.inline.json").string(), false);
  WhatIfOptions o;
  o.reduce_grad = ReducePolicy::INLINE;
  const WhatIfResult r = analyze_ppstream_trace(trace, o);
  EXPECT_LT(r.max_resim_error, 1e-6);
  ASSERT_TRUE(r.predicted);
  EXPECT_GT(inline_ms, r.steps.at(0).measured_ms * 1.01);  // going back costs: the test can tell
  EXPECT_NEAR(r.predicted->measured_costs_ms, inline_ms, 0.01 * inline_ms);
}

// A replay-shaped directory (replay.inline.rankN.json per rank, steps marked on the host lane, as
// src/replay/worker.cpp writes them) from two engine runs of the simulator's costs, the second
// step 0.5 s after the first ends: the reader splits the steps and each gives its step back.
TEST(WhatIfPrograms, ReplayDirectoryStepsAreSplitAndEachResimulates) {
  std::string text = read(example("seed-pp4-vpp2-hsdp-64.yaml"));
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"shard_size: 4 ", "shard_size: 2 "}, {"replicate_size: 4 ", "replicate_size: 1 "},
           {"mode: hsdp", "mode: fsdp"}, {"dp_index: 9,", "dp_index: 1,"}, {"dp_index: 14,", "dp_index: 0,"},
           {"reduce_grad: async", "reduce_grad: inline"}}) {
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  }
  const PipelineConfig cfg = load_config_text(text, "fsdp-2");
  LowerOptions lo;
  lo.expanded = true;
  const ProgramSet set = compile(cfg, lo);
  const sim::CostSpec cost = sim::parse_cost_spec(cfg.extra_sections.at("cost"), cfg.num_stages());
  const sim::StragglerModel strag(sim::parse_straggler_spec(cfg.extra_sections.at("straggler"), set.world, cfg.num_stages()),
                                  set.world);
  const sim::SimCostModel model(set, cfg, cost, strag);
  EngineOptions eo;
  eo.platform = PlatformKind::ASCEND_MINDSPORE;
  eo.cost = &model;
  const EngineResult run = run_engine(set, eo);
  ASSERT_TRUE(run.completed);
  const auto dir = temp_dir("whatif_replay_dir");
  std::ofstream(dir / "replay.inline.config.yaml") << to_yaml(cfg);
  const double kSecondStepMs = run.makespan_ms + 500;
  for (const Program& p : set.programs) {
    analyze::TraceWriter w("replay", true);
    for (int k = 0; k < 2; ++k) {
      w.step(p.rank, k, k * kSecondStepMs * 1000, run.makespan_ms * 1000);
      sim::add_trace_slices(w, set, run, [&](const Program& q) { return q.rank == p.rank; }, k * kSecondStepMs, &model);
    }
    std::ofstream(dir / ("replay.inline.rank" + std::to_string(p.rank.v) + ".json")) << w.str();
  }
  WhatIfOptions o;
  o.reduce_grad = ReducePolicy::ASYNC;
  const WhatIfResult r = analyze_ppstream_trace(dir.string(), o);
  ASSERT_EQ(r.steps.size(), 2u);
  for (const StepFigures& f : r.steps) {
    EXPECT_NEAR(f.measured_ms, run.makespan_ms, 1e-6 * run.makespan_ms);
    EXPECT_NEAR(f.resimulated_ms, run.makespan_ms, 1e-6 * run.makespan_ms);
  }
  ASSERT_TRUE(r.predicted);
  ASSERT_EQ(r.predicted->per_step_ms.size(), 2u);
  sim::SimOptions so;
  so.policies = {ReducePolicy::ASYNC};
  so.cluster = true;
  const double async_ms = sim::simulate(cfg, so).runs.at(0).metrics.step_time_ms;
  EXPECT_LT(async_ms, run.makespan_ms * 0.99);
  EXPECT_NEAR(r.predicted->measured_costs_ms, async_ms, 0.01 * async_ms);
}

// analyze_ppstream_trace(path) throws a LiftError whose message holds `what`.
void expect_lift_error(const std::string& path, const std::string& what) {
  try {
    analyze_ppstream_trace(path);
    ADD_FAILURE() << path << ": no LiftError";
  } catch (const LiftError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(WhatIfPrograms, LocatedErrors) {
  const PipelineConfig cfg = load_config_file(example("small-pp2-vpp2-hsdp.yaml"));
  const auto dir = temp_dir("whatif_errors");
  const std::string trace = (dir / "t.json").string();
  simulate_to(cfg, ReducePolicy::ASYNC, trace);
  EXPECT_NO_THROW(analyze_ppstream_trace(trace));
  // Replica 0 only: the collectives' other members are not in the trace.
  const std::string one = (dir / "one.json").string();
  simulate_to(cfg, ReducePolicy::ASYNC, one, false);
  expect_lift_error(one, "--trace-every-rank");
  // A slice no instruction names.
  std::string text = read(trace);
  const auto at = text.find("compute F mb0 s0");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 16, "compute F mb9 s0");
  const std::string bad = (dir / "bad.json").string();
  std::ofstream(bad) << text;
  std::ofstream(bad + ".config.yaml") << read(trace + ".config.yaml");
  expect_lift_error(bad, "'r0 compute F mb9 s0' of rank 0 names no instruction");
  // No config beside the trace.
  std::filesystem::remove(trace + ".config.yaml");
  expect_lift_error(trace, ".config.yaml beside it");
}

}  // namespace
}  // namespace ppstream::whatif
