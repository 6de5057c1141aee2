// Round-trip property over the verification grid: for every configuration, the simulator's own
// Chrome trace (default cost model, so zero-cost P2P batches share timestamps) must be readable
// by `analyze` and give back the simulator's step time, bubble ratio and per-rank compute and
// compute-stream waits. Was: "per-channel op order is inconsistent with FIFO matching" when
// equal timestamps on a stream were reordered by the analyzer's sort.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "../analyze/util.h"
#include "ppstream/analyze/analyze.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/grid/grid.h"

namespace ppstream {
namespace {

constexpr double kTolMs = 1e-3;  // the trace prints µs with 3 decimals

TEST(HardenTraceRoundTrip, EveryGridConfigReadsBackTheSimulatorsMetrics) {
  GridOptions g;
  g.max_pp = 3;
  g.max_vpp = 2;
  g.max_microbatches = 6;
  const auto dir = analyze::testing::temp_dir("harden_roundtrip");
  const std::string trace = (dir / "t.json").string();
  size_t checked = 0;
  for (const PipelineConfig& cfg : grid_configs(g)) {
    SCOPED_TRACE(summarize(cfg));
    sim::SimOptions o;
    o.trace_path = trace;
    const sim::SimReport rep = sim::simulate(cfg, o);
    ASSERT_EQ(rep.runs.size(), 1u);
    const sim::SimMetrics& sm = rep.runs[0].metrics;
    analyze::AnalysisResult a;
    ASSERT_NO_THROW(a = analyze::analyze_paths({trace}));
    EXPECT_NEAR(a.total.step_time_ms, sm.step_time_ms, kTolMs);
    EXPECT_NEAR(a.total.bubble_ratio, sm.bubble_ratio, 1e-6);
    ASSERT_EQ(a.total.ranks.size(), sm.ranks.size());
    for (const auto& sr : sm.ranks) {
      auto ar = std::find_if(a.total.ranks.begin(), a.total.ranks.end(),
                             [&](const analyze::RankMetrics& m) { return m.rank == sr.rank; });
      ASSERT_NE(ar, a.total.ranks.end()) << "rank " << sr.rank.v;
      EXPECT_NEAR(ar->compute_ms, sr.compute_ms, kTolMs) << "rank " << sr.rank.v;
      EXPECT_NEAR(ar->compute_wait_ms, sr.compute_wait_ms, kTolMs) << "rank " << sr.rank.v;
    }
    ++checked;
    if (HasFailure()) break;  // one configuration's report is enough to debug
  }
  std::filesystem::remove_all(dir);
  EXPECT_GT(checked, 100u);
}

}  // namespace
}  // namespace ppstream
