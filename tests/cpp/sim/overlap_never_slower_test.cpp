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
#include "ppstream/sim/overlap_check.h"

namespace ppstream {
namespace {

double step_ms(const PipelineConfig& c) {
  LowerOptions lo;
  lo.verify_each_pass = false;
  return sim::default_step_ms(compile(c, lo), c);
}

// The check itself is sim::check_overlap_never_slower (shared with Python's full-grid test,
// tests/python/test_overlap_grid.py).
TEST(OverlapNeverSlower, OnTheVerifyGridUnderTheDefaultCostModel) {
  GridOptions o;
  if (!std::getenv("PPSTREAM_FULL_GRID")) {
    o.max_pp = 4;
    o.max_vpp = 2;
    o.max_microbatches = 8;
  }
  const sim::OverlapCheck res = sim::check_overlap_never_slower(o);
  EXPECT_GT(res.configs, 500);
  EXPECT_EQ(res.comparisons, 4 * res.configs);
  for (size_t k = 0; k < res.regressions.size() && k < 5; ++k) ADD_FAILURE() << res.regressions[k];
  EXPECT_TRUE(res.regressions.empty()) << res.regressions.size() << " regressions";
}

// A step that got slower with the flag on is reported with both figures.
TEST(OverlapNeverSlower, ANegativeToleranceReportsEveryPairThatIsNotFaster) {
  GridOptions o;
  o.max_pp = 2;
  o.max_vpp = 1;
  o.max_microbatches = 2;
  const sim::OverlapCheck res = sim::check_overlap_never_slower(o, -0.5);
  ASSERT_GT(res.configs, 0);
  EXPECT_EQ(static_cast<int64_t>(res.regressions.size()), res.comparisons);
  EXPECT_NE(res.regressions.front().find(" ms -> "), std::string::npos) << res.regressions.front();
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
