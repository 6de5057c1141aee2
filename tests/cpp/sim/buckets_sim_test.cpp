// Gradient buckets in the simulator (docs/semantics.md "Gradient buckets"): a hand-derived
// memory peak and step, and the bound on what async with k > 1 buckets may cost over k = 1 on
// every example config: (k-1) alpha terms per split stage of a rank, nothing more.
#include <gtest/gtest.h>

#include <filesystem>

#include <fmt/format.h>

#include "ppstream/config/config.h"
#include "ppstream/lower/lower.h"
#include "ppstream/program/ir.h"
#include "ppstream/sim/cost_model.h"
#include "ppstream/sim/simulate.h"

namespace ppstream::sim {
namespace {

// PP1 × VPP2, one microbatch, 4 layers per stage, DP over 2 replicas; only gradient buffers are
// counted (1 byte per layer). F = 1 ms/layer, B = 1 ms/layer, a reduction = the all-reduce's
// 2(n-1)·alpha = 1 ms (bandwidth free). Rank 0 runs F s0 [0,4], F s1 [4,8], then the backward
// of s1 and of s0.
//   k = 1: s1's buffer (4) from 8; B s1 [8,12]; REDUCE_GRAD s1 [12,13]; s0's buffer (4) from
//          12, B s0 [12,16], REDUCE_GRAD s0 [16,17]: peak 8 at 12 (both buffers), step 17.
//   k = 2: pieces of 2 layers: B s1 bucket0 [8,10], its reduction [10,11] frees 2 at 11;
//          bucket1 [10,12], reduction [12,13]; s0's buffer from 12: peak 2 + 4 = 6 at 12;
//          s0's buckets reduce [14,15] and [16,17]: step 17.
PipelineConfig two_stages(int32_t buckets) {
  return load_config_text(fmt::format(R"(
pipeline_parallel_size: 1
pipeline_parallel_interleave_num: 2
micro_batch_num: 1
num_layers: 8
schedule: interleaved_1f1b
data_parallel: {{mode: hsdp, shard_size: 1, replicate_size: 2, reduce_grad: async, sync_last_reduce: false, reduce_buckets: {}}}
cost: {{forward_ms_per_layer: 1, backward_ms_per_layer: 1, collective_alpha_ms: 0.5, grad_buffer_bytes_per_layer: 1, stash_bytes_per_layer: 0, recv_buffer_bytes: 0}}
)",
                                      buckets),
                          "test");
}

TEST(BucketsSim, EachBucketsGradientsAreFreedAtItsReductionEnd) {
  struct Case {
    int32_t k;
    double peak, peak_ms;
  };
  for (const Case c : {Case{1, 8, 12}, Case{2, 6, 12}}) {
    const SimReport rep = simulate(two_stages(c.k), {});
    const PolicyRun& run = rep.runs.at(0);
    ASSERT_EQ(run.memory.ranks.size(), 1u);
    EXPECT_DOUBLE_EQ(run.memory.ranks[0].peak_bytes, c.peak) << "k=" << c.k;
    EXPECT_DOUBLE_EQ(run.memory.ranks[0].at_peak.grads, c.peak) << "k=" << c.k;
    EXPECT_DOUBLE_EQ(run.memory.ranks[0].peak_ms, c.peak_ms) << "k=" << c.k;
    EXPECT_DOUBLE_EQ(run.metrics.step_time_ms, 17.0) << "k=" << c.k;
  }
}

// The alpha terms of one REDUCE_GRAD (cost_model.h): (shard-1)·alpha + 2(replicate-1)·alpha.
double alpha_terms(const PipelineConfig& cfg, const CostSpec& cost) {
  return ((cfg.shard_size - 1) + 2.0 * (cfg.replicate_size - 1)) * cost.collective_alpha_ms;
}

double step_ms(const PipelineConfig& cfg) { return simulate(cfg, {}).runs.at(0).metrics.step_time_ms; }

// Every example with data parallelism, async as written and without sync_last_reduce, k = 2 … 4
// where its stages have the layers: the step is at most k = 1's plus (k-1)·vpp·alpha_terms (a
// rank's split stages, each paying k-1 extra alpha terms, in series on the reduction stream).
TEST(BucketsSim, AsyncIsNeverSlowerThanOneBucketBeyondTheAlphaBound) {
  int compared = 0, faster = 0;
  for (const auto& entry : std::filesystem::directory_iterator(PPSTREAM_SOURCE_DIR "/examples")) {
    if (entry.path().extension() != ".yaml") continue;
    PipelineConfig base = load_config_file(entry.path().string());
    if (base.mode == DPMode::NONE) continue;
    int32_t fewest = 1 << 30;
    for (const LayerRange& r : base.stage_layers) fewest = std::min(fewest, r.count());
    for (const char* sync_last : {"true", "false"}) {
      PipelineConfig one = base;
      apply_overrides(one, {{"data_parallel.reduce_grad", "async"}, {"data_parallel.sync_last_reduce", sync_last}});
      const double t1 = step_ms(one);
      const CostSpec cost = simulate(one, {}).cost;
      for (int32_t k = 2; k <= std::min(4, fewest); ++k) {
        PipelineConfig split = one;
        apply_override(split, "data_parallel.reduce_buckets", std::to_string(k));
        const double tk = step_ms(split);
        const double bound = (k - 1) * base.pipeline_parallel_interleave_num * alpha_terms(base, cost);
        EXPECT_LE(tk, t1 + bound + 1e-9) << entry.path().filename() << " sync_last=" << sync_last << " k=" << k
                                         << ": " << t1 << " ms -> " << tk << " ms (bound +" << bound << ")";
        ++compared;
        faster += tk < t1 - 1e-9;
      }
    }
  }
  EXPECT_GT(compared, 10);
  EXPECT_GT(faster, 0);  // the seed examples' exposed reduction shrinks
}

}  // namespace
}  // namespace ppstream::sim
