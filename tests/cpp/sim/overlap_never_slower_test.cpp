// An overlap option never costs time: for every configuration of the verify grid, under the
// default cost model (docs/simulate.md), turning pipeline_parallel_overlap_b_f or
// pipeline_parallel_overlap_p2p on (the other flag fixed) never makes the simulated step more
// than 0.5 % slower. The gtest runs the reduced grid of tests/cpp/lower/grid_test.cpp
// (PP ≤ 4, VPP ≤ 2, microbatches ≤ 8); PPSTREAM_FULL_GRID=1 runs the whole default grid.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "ppstream/engine/engine.h"
#include "ppstream/lower/lower.h"
#include "ppstream/sim/cost_model.h"
#include "ppstream/grid/grid.h"

namespace ppstream {
namespace {

double step_ms(const PipelineConfig& c) {
  LowerOptions lo;
  lo.verify_each_pass = false;
  const ProgramSet set = compile(c, lo);
  const sim::SimCostModel cost(set, c, sim::CostSpec{}, sim::StragglerModel({}, set.world));
  EngineOptions eo;
  eo.platform = PlatformKind::ASCEND_MINDSPORE;
  eo.cost = &cost;
  const EngineResult r = run_engine(set, eo);
  if (!r.completed) throw std::runtime_error(summarize(c) + ": " + format_deadlock(set, r));
  return r.makespan_ms;
}

TEST(OverlapNeverSlower, OnTheVerifyGridUnderTheDefaultCostModel) {
  GridOptions o;
  if (!std::getenv("PPSTREAM_FULL_GRID")) {
    o.max_pp = 4;
    o.max_vpp = 2;
    o.max_microbatches = 8;
  }
  // Step time per flag combination (bit 0 overlap_p2p, bit 1 overlap_b_f), keyed by the rest.
  // The grid varies overlap_p2p only; overlap_b_f is toggled here, and its programs must equal
  // the flag-off ones (it no longer changes the lowering: the verify grid skips that axis).
  std::map<std::string, std::array<double, 4>> steps;
  LowerOptions lo;
  lo.verify_each_pass = false;
  for (const PipelineConfig& g : grid_configs(o)) {
    PipelineConfig base = g;
    base.pipeline_parallel_overlap_p2p = false;
    auto [it, fresh] = steps.try_emplace(summarize(base), std::array<double, 4>{-1, -1, -1, -1});
    for (bool b_f : {false, true}) {
      PipelineConfig c = g;
      c.pipeline_parallel_overlap_b_f = b_f;
      it->second[(c.pipeline_parallel_overlap_p2p ? 1 : 0) | (b_f ? 2 : 0)] = step_ms(c);
    }
    PipelineConfig with = g;
    with.pipeline_parallel_overlap_b_f = true;
    EXPECT_EQ(compile(with, lo), compile(g, lo)) << summarize(with);
  }
  EXPECT_GT(steps.size(), 500u);
  int failures = 0;
  for (const auto& [key, t] : steps) {
    // (off, on) pairs: overlap_p2p with b_f off/on, overlap_b_f with p2p off/on.
    for (auto [off, on] : {std::pair{0, 1}, std::pair{2, 3}, std::pair{0, 2}, std::pair{1, 3}}) {
      ASSERT_GE(t[off], 0) << key;
      ASSERT_GE(t[on], 0) << key;
      if (t[on] <= t[off] * 1.005) continue;
      if (++failures <= 5)
        ADD_FAILURE() << key << ": turning " << (on - off == 1 ? "overlap_p2p" : "overlap_b_f") << " on: "
                      << t[off] << " ms -> " << t[on] << " ms";
    }
  }
  EXPECT_EQ(failures, 0);
}

// The case: plain 1F1B, PP2, 3 microbatches, one layer per stage; with the fused unit
// the flag made the step 66 % slower.
TEST(OverlapNeverSlower, OverlapBFDoesNotHoldTheGradientSend) {
  PipelineConfig c;
  c.pipeline_parallel_size = 2;
  c.micro_batch_num = 3;
  c.num_layers = 2;
  c.stage_layers = {{0, 0}, {1, 1}};
  c.schedule = ScheduleKind::ONE_F_ONE_B;
  c.reduce_grad = ReducePolicy::NONE;
  const double off = step_ms(c);
  c.pipeline_parallel_overlap_b_f = true;
  EXPECT_DOUBLE_EQ(step_ms(c), off);
  // 1F1B with F = 1, B = 2, free P2P: (m + p - 1) · 3 ms.
  EXPECT_DOUBLE_EQ(off, 12.0);
}

}  // namespace
}  // namespace ppstream
