// Cost and straggler models: formulas checked against hand arithmetic, section parsing errors,
// and seeded draws that depend only on their key.
#include <gtest/gtest.h>

#include "ppstream/config/config.h"
#include "ppstream/sim/cost_model.h"
#include "ppstream/sim/straggler.h"

namespace ppstream::sim {
namespace {

TEST(SimCost, RingFormulasByHand) {
  // n = 4, N = 4e9 bytes, alpha = 0.01 ms, beta = 4 GB/s: N/beta = 1000 ms.
  EXPECT_DOUBLE_EQ(ring_reduce_scatter_ms(4, 4e9, 0.01, 4.0), 3 * 0.01 + 0.75 * 1000.0);
  EXPECT_DOUBLE_EQ(ring_all_gather_ms(4, 4e9, 0.01, 4.0), 750.03);
  EXPECT_DOUBLE_EQ(ring_all_reduce_ms(4, 4e9, 0.01, 4.0), 2 * 3 * 0.01 + 2 * 0.75 * 1000.0);
  EXPECT_DOUBLE_EQ(ring_all_reduce_ms(1, 4e9, 0.01, 4.0), 0.0);
}

PipelineConfig seed_like() {
  return load_config_text(R"(
pipeline_parallel_size: 4
pipeline_parallel_interleave_num: 2
micro_batch_num: 8
pipeline_parallel_layers_per_stage: ["0-5,24-29", "6-11,30-35", "12-17,36-41", "18-23,42-44"]
data_parallel: {mode: hsdp, shard_size: 4, replicate_size: 8}
)",
                          "test");
}

TEST(SimCost, PerStageTimesP2PAndHsdpReduction) {
  const PipelineConfig cfg = seed_like();
  CostSpec c = parse_cost_spec(R"(
forward_ms_per_layer: 2
backward_ms_per_layer: 4
moe_dispatch_ms_per_layer: 0.25
moe_combine_ms_per_layer: 0.25
p2p_latency_ms: 0.02
p2p_bandwidth_gb_per_s: 17.5
activation_bytes: 8388608
grad_bytes_per_layer: 1.0e9
collective_alpha_ms: 0.5
shard_bandwidth_gb_per_s: 10
replicate_bandwidth_gb_per_s: 5
)",
                               cfg.num_stages());
  ProgramSet set;
  set.world = cfg.world(false);
  Program p;
  set.programs.push_back(p);
  SimCostModel m(set, cfg, c, StragglerModel({}, set.world));
  Instr f;
  f.op = OpKind::F;
  f.stage = Stage{7};  // layers 42-44: 3 layers
  EXPECT_DOUBLE_EQ(m.compute_ms(p, f), 3 * 2.0 + 3 * 0.5);
  f.stage = Stage{6};  // 6 layers
  f.op = OpKind::B;
  EXPECT_DOUBLE_EQ(m.compute_ms(p, f), 6 * 4.0 + 6 * 0.5);
  // The seed's 8 MiB gradient: 0.02 ms + 8388608 B / 17.5e9 B/s = 0.4993 ms (about 0.5 ms).
  Instr b;
  b.op = OpKind::BATCH;
  b.p2p = {{P2PKind::SEND_B, Microbatch{15}, Stage{7}, Rank{2}}, {P2PKind::RECV_B, Microbatch{12}, Stage{3}, Rank{0}}};
  EXPECT_NEAR(m.batch_ms(p, b), 0.02 + 8388608.0 / 17.5e9 * 1e3, 1e-12);
  EXPECT_NEAR(m.batch_ms(p, b), 0.5, 0.001);
  // REDUCE_GRAD s7: G = 3e9 bytes. Reduce-scatter over shard 4 at 10 GB/s: 3*0.5 + 3/4*300 ms;
  // all-reduce of G/4 = 0.75e9 over replicate 8 at 5 GB/s: 2*7*0.5 + 2*7/8*150 ms.
  Instr r;
  r.op = OpKind::REDUCE_GRAD;
  r.stage = Stage{7};
  EXPECT_DOUBLE_EQ(m.collective_ms(p, r), (1.5 + 225.0) + (7.0 + 262.5));
}

TEST(SimCost, SectionErrorsNameKeyValueAndRule) {
  try {
    parse_cost_spec("forward_ms_per_layr: 2\n", 8);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cost.forward_ms_per_layr"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("did you mean forward_ms_per_layer"), std::string::npos) << e.what();
  }
  try {
    parse_cost_spec("p2p_latency_ms: -1\n", 8);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cost.p2p_latency_ms=-1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_cost_spec("stage_forward_ms: [1, 2]\n", 8), ConfigError);
  EXPECT_THROW(parse_cost_spec("link_sharing: sometimes\n", 8), ConfigError);
  EXPECT_THROW(parse_straggler_spec("tails: [{ranks: [3]}]\n", 4), ConfigError);             // no delay_ms
  EXPECT_THROW(parse_straggler_spec("tails: [{pp_rank: 1, dp_index: 4, delay_ms: 1}]\n", 4), ConfigError);
  EXPECT_THROW(parse_straggler_spec("distribution: {kind: gamma, median_ms: 1}\n", 4), ConfigError);
}

TEST(SimStraggler, FixedTailHitsNamedMemberAndItsGroupOnly) {
  const World w{4, 2, 2, 4, false};  // dp 8
  const StragglerSpec spec = parse_straggler_spec(R"(
tails:
  - {pp_rank: 2, dp_index: 5, delay_ms: 30, collectives: [reduce_grad], stages: [6]}
  - {ranks: [25], delay_ms: 7}
)",
                                                  w.dp());
  StragglerModel m(spec, w);
  EXPECT_DOUBLE_EQ(m.delay_ms(2 * 8 + 5, CollectiveKind::REDUCE_GRAD, Stage{6}), 30.0);
  EXPECT_DOUBLE_EQ(m.delay_ms(2 * 8 + 5, CollectiveKind::REDUCE_GRAD, Stage{2}), 0.0);
  EXPECT_DOUBLE_EQ(m.delay_ms(2 * 8 + 5, CollectiveKind::UNSHARD, Stage{6}), 0.0);
  EXPECT_DOUBLE_EQ(m.delay_ms(2 * 8 + 4, CollectiveKind::REDUCE_GRAD, Stage{6}), 0.0);
  // Outside the one-replica set: the DP group of PP rank 2 holds the late member (dp index 5).
  EXPECT_DOUBLE_EQ(m.slowest_outside_ms(2, CollectiveKind::REDUCE_GRAD, Stage{6}), 30.0);
  EXPECT_DOUBLE_EQ(m.slowest_outside_ms(1, CollectiveKind::REDUCE_GRAD, Stage{5}), 0.0);
  // Rank 25 = PP rank 3, dp index 1: inside the shard group {0, 1} of replica 0.
  EXPECT_DOUBLE_EQ(m.slowest_outside_ms(3, CollectiveKind::UNSHARD, Stage{3}), 7.0);
}

TEST(SimStraggler, SeededDrawsDependOnlyOnTheirKey) {
  const World w{2, 1, 1, 64, true};
  StragglerSpec spec = parse_straggler_spec("seed: 11\ndistribution: {kind: lognormal, median_ms: 2, sigma: 0.5}\n", w.dp());
  StragglerModel a(spec, w, 0), b(spec, w, 0), c(spec, w, 1);
  std::vector<double> draws;
  for (int32_t r = 0; r < 128; ++r) draws.push_back(a.delay_ms(r, CollectiveKind::REDUCE_GRAD, Stage{0}));
  // Asked in reverse order from another model: the same values.
  for (int32_t r = 127; r >= 0; --r)
    EXPECT_EQ(b.delay_ms(r, CollectiveKind::REDUCE_GRAD, Stage{0}), draws[static_cast<size_t>(r)]);
  int differ = 0;
  for (int32_t r = 0; r < 128; ++r) differ += c.delay_ms(r, CollectiveKind::REDUCE_GRAD, Stage{0}) != draws[static_cast<size_t>(r)];
  EXPECT_GT(differ, 120);  // another trial draws afresh
  // Lognormal with median 2: about half the draws below 2, all positive.
  int below = 0;
  for (double d : draws) {
    EXPECT_GT(d, 0.0);
    below += d < 2.0;
  }
  EXPECT_GT(below, 40);
  EXPECT_LT(below, 88);
}

}  // namespace
}  // namespace ppstream::sim
