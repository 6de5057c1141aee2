// Every configuration of a reduced grid compiles and verifies (deadlock under strict and
// cpu-serial, FIFO, batch shapes, happens-before, reductions); the full grid (PP ≤ 8, VPP ≤ 4,
// microbatches ≤ 32) runs in tests/python/test_grid.py on the optimized build.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "ppstream/grid/grid.h"

namespace ppstream {
namespace {

TEST(Grid, ReducedGridVerifies) {
  GridOptions o;
  o.max_pp = 4;
  o.max_vpp = 2;
  o.max_microbatches = 8;
  const GridResult r = verify_grid(o);
  EXPECT_GT(r.configs, 2000);
  for (size_t k = 0; k < std::min<size_t>(r.failures.size(), 5); ++k) ADD_FAILURE() << r.failures[k];
  EXPECT_TRUE(r.failures.empty()) << r.failures.size() << " configurations failed";
}

TEST(Grid, ExpandedWorldsVerify) {
  // Every DP rank built (shard 2 x replicate 2): collectives meet across ranks.
  GridOptions o;
  o.max_pp = 2;
  o.max_vpp = 2;
  o.max_microbatches = 4;
  o.expanded = true;
  const GridResult r = verify_grid(o);
  EXPECT_GT(r.configs, 100);
  for (size_t k = 0; k < std::min<size_t>(r.failures.size(), 5); ++k) ADD_FAILURE() << r.failures[k];
}

TEST(Grid, CoversEveryAxis) {
  GridOptions o;
  const auto configs = grid_configs(o);
  std::set<int32_t> pps, vpps;
  std::set<P2PTransport> transports;
  std::set<DPMode> modes;
  std::set<ReducePolicy> policies;
  int32_t max_mb = 0;
  for (const PipelineConfig& c : configs) {
    pps.insert(c.pipeline_parallel_size);
    vpps.insert(c.pipeline_parallel_interleave_num);
    transports.insert(c.pipeline_parallel_p2p_transport);
    modes.insert(c.mode);
    policies.insert(c.reduce_grad);
    max_mb = std::max(max_mb, c.micro_batch_num);
  }
  EXPECT_EQ(pps.size(), 8u);
  EXPECT_EQ(vpps.size(), 4u);
  EXPECT_EQ(transports.size(), 3u);
  EXPECT_EQ(modes.size(), 3u);
  EXPECT_EQ(policies.size(), 3u);
  EXPECT_EQ(max_mb, 32);
}

}  // namespace
}  // namespace ppstream
