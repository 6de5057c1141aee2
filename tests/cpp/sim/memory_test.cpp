// The memory model's peaks pinned against hand-derived values (include/ppstream/sim/memory.h):
// activation stashes under GPipe, 1F1B, interleaved 1F1B and ZB-H1 (one byte per stash so that
// the peak counts stashes), unsharded parameters under the FSDP prefetch window, gradient
// buffers held until the reduction ends, and the memory section of simulate's outputs.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "ppstream/config/config.h"
#include "ppstream/sim/memory.h"
#include "ppstream/sim/simulate.h"

namespace ppstream::sim {
namespace {

// One layer per stage; a stash is 1 byte, nothing else is counted.
PipelineConfig stash_only(const std::string& pipeline, const std::string& extra_cost = "") {
  return load_config_text(pipeline + "cost: {forward_ms_per_layer: 1, backward_ms_per_layer: 2, stash_bytes_per_layer: 1" +
                              extra_cost + "}\n",
                          "test");
}

std::vector<double> peaks(const PipelineConfig& cfg) {
  const SimReport rep = simulate(cfg, {});
  std::vector<double> out;
  for (const RankMemory& r : rep.runs.at(0).memory.ranks) out.push_back(r.peak_bytes);
  return out;
}

TEST(Memory, GPipeHoldsEveryMicrobatch) {
  for (auto [p, m] : {std::pair{4, 6}, std::pair{2, 3}}) {
    const auto got = peaks(stash_only(fmt::format("pipeline_parallel_size: {}\nmicro_batch_num: {}\nnum_layers: {}\nschedule: gpipe\n", p, m, p)));
    EXPECT_EQ(got, std::vector<double>(static_cast<size_t>(p), m)) << "p=" << p << " m=" << m;
  }
}

TEST(Memory, OneFOneBHoldsPMinusRankOnRankR) {
  for (auto [p, m] : {std::pair{4, 8}, std::pair{3, 5}}) {
    const auto got = peaks(stash_only(fmt::format("pipeline_parallel_size: {}\nmicro_batch_num: {}\nnum_layers: {}\nschedule: 1f1b\n", p, m, p)));
    std::vector<double> want;
    for (int r = 0; r < p; ++r) want.push_back(p - r);
    EXPECT_EQ(got, want) << "p=" << p << " m=" << m;
  }
}

// Interleaved 1F1B (src/schedule/interleaved_1f1b.cpp): rank r forwards W_r = 2(p-r-1) +
// (v-1)g virtual microbatches before its first backward (g = m / max(1, m/p)), then alternates
// F, B; the compute stream is serial, so the next F starts holding W_r + 1 stashes, one per
// (microbatch, chunk) (one layer per stage: 1 byte each), and never more.
TEST(Memory, InterleavedHoldsItsWarmupPlusOne) {
  struct Case { int p, v, m; std::vector<double> want; };
  for (const Case& c : {Case{2, 2, 4, {5, 3}},            // g = 2: W = 4, 2
                        Case{4, 2, 8, {11, 9, 7, 5}}}) {  // g = 4: W = 10, 8, 6, 4
    const auto got = peaks(stash_only(fmt::format(
        "pipeline_parallel_size: {}\npipeline_parallel_interleave_num: {}\nmicro_batch_num: {}\nnum_layers: {}\n"
        "schedule: interleaved_1f1b\n", c.p, c.v, c.m, c.p * c.v)));
    EXPECT_EQ(got, c.want) << "p=" << c.p << " v=" << c.v << " m=" << c.m;
  }
}

// ZB-H1 (src/schedule/zb_h1.cpp): rank r keeps 1F1B's p-r in-flight forwards, and defers each W
// until r later I's have run. After I only the W part f of a stash stays; at the start of each
// steady F rank r holds p-r whole stashes and r W parts: (p-r) + r·f. p=4, m=8:
//   f = 0.5: 4, 3.5, 3, 2.5;  f = 0 (W needs nothing): 4, 3, 2, 1 = 1F1B's p-r.
TEST(Memory, ZbH1HoldsPMinusRWholeAndRWeightParts) {
  for (auto [f, want] : {std::pair{0.5, std::vector<double>{4, 3.5, 3, 2.5}}, std::pair{0.0, std::vector<double>{4, 3, 2, 1}}}) {
    const auto got = peaks(stash_only("pipeline_parallel_size: 4\nmicro_batch_num: 8\nnum_layers: 4\nschedule: zb_h1\n",
                                      fmt::format(", dw_stash_fraction: {}", f)));
    EXPECT_EQ(got, want) << "f=" << f;
  }
}

TEST(Memory, PeakCountsStashesAndIsTheFirstInstant) {
  // 1F1B p=2 m=4, F 1 ms, B 2 ms, free P2P: rank 0 runs F0 (0-1), F1 (1-2); rank 1 runs F0
  // (1-2), B0 (2-4); rank 0's B0 runs 4-6, then F2 starts at 6 as B0 frees (frees first): 2
  // stashes, first held at F1's start, t=1.
  const SimReport rep = simulate(stash_only("pipeline_parallel_size: 2\nmicro_batch_num: 4\nnum_layers: 2\nschedule: 1f1b\n"), {});
  const RankMemory& r0 = rep.runs.at(0).memory.ranks.at(0);
  EXPECT_EQ(r0.peak_stashes, 2);
  EXPECT_DOUBLE_EQ(r0.peak_ms, 1.0);
  EXPECT_DOUBLE_EQ(r0.at_peak.activations, 2.0);
}

// PP2 x VPP2 (g = 2), fsdp 2, parameters 1 byte per layer, one layer per stage, F 1 ms: a
// stage's parameters are held from its UNSHARD to its RESHARD (owned by the reduction, after the
// stage's last backward), so both chunks' are held together (peak 2). When the second is
// gathered depends on the prefetch window and on the host: under ascend-mindspore the host
// issues ahead and both all-gathers start at t=0 whatever the window; under cpu-serial (the
// host blocks on every op) depth 2 gathers both before the first compute (rank 0 at t=0,
// rank 1 at t=1 once its first receive has matched F(0,s0)), depth 1 just before the chunk's
// first forward: after F(0), F(1) of chunk 0, so rank 0 at t=2 and rank 1 at t=3.
TEST(Memory, UnshardedParametersFollowThePrefetchWindow) {
  struct Case { PlatformKind platform; int depth; std::vector<double> peak_ms; };
  for (const Case& c : {Case{PlatformKind::ASCEND_MINDSPORE, 1, {0, 0}}, Case{PlatformKind::ASCEND_MINDSPORE, 2, {0, 0}},
                        Case{PlatformKind::CPU_SERIAL, 1, {2, 3}}, Case{PlatformKind::CPU_SERIAL, 2, {0, 1}}}) {
    const PipelineConfig cfg = load_config_text(fmt::format(R"(
pipeline_parallel_size: 2
pipeline_parallel_interleave_num: 2
micro_batch_num: 4
num_layers: 4
schedule: interleaved_1f1b
data_parallel: {{mode: fsdp, shard_size: 2, max_active_stages: {}}}
cost: {{forward_ms_per_layer: 1, backward_ms_per_layer: 2, unsharded_param_bytes_per_layer: 1}}
)",
                                                            c.depth),
                                                "test");
    SimOptions o;
    o.platform = c.platform;
    const SimReport rep = simulate(cfg, o);
    std::vector<double> at;
    for (const RankMemory& r : rep.runs.at(0).memory.ranks) {
      EXPECT_DOUBLE_EQ(r.peak_bytes, 2.0) << "depth " << c.depth;
      EXPECT_DOUBLE_EQ(r.at_peak.params, 2.0) << "depth " << c.depth;
      at.push_back(r.peak_ms);
    }
    EXPECT_EQ(at, c.peak_ms) << to_string(c.platform) << " depth " << c.depth;
  }
}

// PP2 1F1B, plain DP (replicate 2): the gradient buffer (1 byte per layer, 3 layers per stage)
// is held from the first backward until the stage's reduction ends. A 50 ms tail on the
// reduction holds it 50 ms longer; async keeps it until reduce_done, the drain before OPT_STEP.
TEST(Memory, GradientsAreHeldUntilTheReductionEnds) {
  for (const char* policy : {"inline", "async"}) {
    const PipelineConfig cfg = load_config_text(fmt::format(R"(
pipeline_parallel_size: 2
micro_batch_num: 4
num_layers: 6
schedule: 1f1b
data_parallel: {{mode: hsdp, shard_size: 1, replicate_size: 2, reduce_grad: {}, sync_last_reduce: false}}
cost: {{forward_ms_per_layer: 1, backward_ms_per_layer: 2, grad_buffer_bytes_per_layer: 1}}
straggler: {{tails: [{{pp_rank: 0, dp_index: 1, delay_ms: 50}}]}}
)",
                                                            policy),
                                                "test");
    SimOptions o;
    o.svg_path = testing::TempDir() + "memory_test.svg";  // keeps the curves
    const SimReport rep = simulate(cfg, o);
    std::remove(o.svg_path.c_str());
    const RankMemory& r0 = rep.runs.at(0).memory.ranks.at(0);
    EXPECT_DOUBLE_EQ(r0.peak_bytes, 3.0) << policy;
    // The buffer drops to zero when rank 0's REDUCE_GRAD ends: at least 50 ms after its last
    // backward (t < 30 without the tail), and never before that.
    ASSERT_GE(r0.curve.size(), 3u) << policy;
    double freed_at = -1;
    for (size_t k = 1; k < r0.curve.size(); ++k)
      if (r0.curve[k].bytes == 0 && r0.curve[k - 1].bytes > 0) freed_at = r0.curve[k].t_ms;
    EXPECT_GT(freed_at, 50.0) << policy;
  }
}

TEST(Memory, DefaultsDeriveFromTheCostKeys) {
  CostSpec c;
  c.activation_bytes = 8;
  c.param_bytes_per_layer = 3;
  c.grad_bytes_per_layer = 5;
  const MemorySpec m = parse_memory_spec("", c);
  EXPECT_DOUBLE_EQ(m.stash_bytes_per_layer, 8);
  EXPECT_DOUBLE_EQ(m.recv_buffer_bytes, 8);
  EXPECT_DOUBLE_EQ(m.unsharded_param_bytes_per_layer, 3);
  EXPECT_DOUBLE_EQ(m.grad_buffer_bytes_per_layer, 5);
  EXPECT_DOUBLE_EQ(m.dw_stash_fraction, 0.5);
  EXPECT_DOUBLE_EQ(parse_memory_spec("{stash_bytes_per_layer: 2}", c).stash_bytes_per_layer, 2);
}

TEST(Memory, BadKeysNameTheKey) {
  const CostSpec c;
  try {
    parse_memory_spec("{dw_stash_fraction: 1.5}", c);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("dw_stash_fraction"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_memory_spec("{recv_buffer_bytes: -1}", c), ConfigError);
  // The cost section's reader accepts the memory keys and still rejects a typo.
  EXPECT_NO_THROW(parse_cost_spec("{stash_bytes_per_layer: 1}", 2));
  EXPECT_THROW(parse_cost_spec("{stash_byte_per_layer: 1}", 2), ConfigError);
}

TEST(Memory, ReportedInJsonTableAndSvg) {
  const PipelineConfig cfg = stash_only("pipeline_parallel_size: 2\nmicro_batch_num: 4\nnum_layers: 2\nschedule: 1f1b\n");
  SimOptions o;
  o.trials = 3;
  o.svg_path = testing::TempDir() + "memory_report.svg";
  const SimReport rep = simulate(cfg, o);
  const auto j = nlohmann::json::parse(report_json(rep));
  const auto& mem = j["policies"]["none"]["memory"];
  EXPECT_DOUBLE_EQ(mem["peak_memory_bytes"].get<double>(), 2.0);
  EXPECT_EQ(mem["ranks"].size(), 2u);
  EXPECT_DOUBLE_EQ(mem["ranks"][1]["peak_bytes"].get<double>(), 1.0);
  EXPECT_NE(report_table(rep).find("peak_memory_gib r1"), std::string::npos);
  std::ifstream f(o.svg_path);
  const std::string svg((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(o.svg_path.c_str());
  EXPECT_NE(svg.find("memory (peak 2 B)"), std::string::npos);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
}

}  // namespace
}  // namespace ppstream::sim

namespace ppstream::sim {
namespace {

// --cluster sweeps replica 0 (every replica runs the same programs): PP2 x dp 2, ranks 0..3,
// replica 0 = ranks 0 and 2; the peaks are the one-replica run's.
TEST(Memory, ClusterSweepsReplicaZero) {
  const PipelineConfig cfg = load_config_text(R"(
pipeline_parallel_size: 2
micro_batch_num: 4
num_layers: 2
schedule: 1f1b
data_parallel: {mode: hsdp, shard_size: 1, replicate_size: 2}
cost: {forward_ms_per_layer: 1, backward_ms_per_layer: 2, stash_bytes_per_layer: 1}
)",
                                              "test");
  SimOptions o;
  o.cluster = true;
  const SimReport rep = simulate(cfg, o);
  const MemoryReport& m = rep.runs.at(0).memory;
  ASSERT_EQ(m.ranks.size(), 4u);
  std::vector<bool> computed;
  for (const RankMemory& r : m.ranks) computed.push_back(r.computed);
  EXPECT_EQ(computed, (std::vector<bool>{true, false, true, false}));
  EXPECT_DOUBLE_EQ(m.ranks[0].peak_bytes, 2.0);
  EXPECT_DOUBLE_EQ(m.ranks[2].peak_bytes, 1.0);
  EXPECT_EQ(m.peak_rank, Rank{0});
}

}  // namespace
}  // namespace ppstream::sim
