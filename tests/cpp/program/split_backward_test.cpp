// The split backward (I = input grad, W = weight grad) through every layer that knows it: the
// text and JSON forms round-trip, the dependency model (program/deps.h), the verifier's
// happens-before and reduction rules, the simulator's dX/dW cost split, and ZB-H1 against the
// published bubble (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "ppstream/config/config.h"
#include "ppstream/lower/lower.h"
#include "ppstream/program/deps.h"
#include "ppstream/program/format.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/verify/verify.h"

namespace ppstream {
namespace {

constexpr const char* kSplit = R"(world pp=2 vpp=1 shard=1 replicate=2 expanded=0 mode=hsdp policy=async
r0 compute F mb0 s0
r0 compute RECORD fwd_out[mb0,s0]
r0 p2p WAIT fwd_out[mb0,s0]
r0 p2p BATCH{SEND_F mb0 s0 ->r1}
r0 p2p BATCH{RECV_B mb0 s0 <-r1}
r0 p2p RECORD recv_B[mb0,s0]
r0 compute WAIT recv_B[mb0,s0]
r0 compute I mb0 s0
r0 compute W mb0 s0
r0 compute REDUCE_GRAD s0
r0 compute OPT_STEP
r1 p2p BATCH{RECV_F mb0 s1 <-r0}
r1 p2p RECORD recv_F[mb0,s1]
r1 compute WAIT recv_F[mb0,s1]
r1 compute F mb0 s1
r1 compute I mb0 s1
r1 compute RECORD bwd_out[mb0,s1]
r1 p2p WAIT bwd_out[mb0,s1]
r1 p2p BATCH{SEND_B mb0 s1 ->r0}
r1 compute W mb0 s1
r1 compute RECORD compute_ready[s1]
r1 reduce WAIT compute_ready[s1]
r1 reduce REDUCE_GRAD s1
r1 reduce RECORD reduce_done[s1]
r1 compute WAIT reduce_done[s1]
r1 compute OPT_STEP
)";

TEST(SplitBackward, TextAndJsonRoundTrip) {
  const ProgramSet set = parse_program_set(kSplit);
  EXPECT_EQ(set.programs[0].instrs[7].op, OpKind::I);
  EXPECT_EQ(set.programs[0].instrs[8].op, OpKind::W);
  EXPECT_EQ(to_text(set), kSplit);
  EXPECT_EQ(parse_program_set(to_text(set)), set);
  EXPECT_EQ(parse_json(to_json(set)), set);
}

TEST(SplitBackward, DependencyModel) {
  EXPECT_EQ(roles_of(OpKind::B), role_bit(Role::INPUT_GRAD) | role_bit(Role::WEIGHT_GRAD));
  EXPECT_TRUE(has_role(OpKind::I, Role::INPUT_GRAD));
  EXPECT_FALSE(has_role(OpKind::I, Role::WEIGHT_GRAD));
  EXPECT_EQ(send_of(OpKind::I, Stage{1}, 2), P2PKind::SEND_B);
  EXPECT_EQ(send_of(OpKind::W, Stage{1}, 2), std::nullopt);
  const auto w = needs_of(OpKind::W, Microbatch{3}, Stage{1}, 4);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].role, Role::INPUT_GRAD);
  EXPECT_EQ(w[0].stage, Stage{1});
  const auto i = needs_of(OpKind::I, Microbatch{3}, Stage{1}, 4);
  ASSERT_EQ(i.size(), 2u);
  EXPECT_EQ(i[0].recv, P2PKind::RECV_B);
  EXPECT_EQ(i[0].stage, Stage{2});
  // r1's last backward of s1: input grad #4 (I), its send #7, weight grad #8 (W).
  const auto sb = stage_backwards(parse_program_set(kSplit).programs[1]);
  ASSERT_EQ(sb.size(), 1u);
  EXPECT_EQ(sb[0].last_input_grad, 4);
  EXPECT_EQ(sb[0].send, 7);
  EXPECT_EQ(sb[0].last_weight_grad, 8);
}

// Both ends of a P2P transfer name the same producer: r0's SEND_F mb0 s0 and r1's RECV_F mb0 s1
// carry FORWARD of (mb0, s0); r1's SEND_B mb0 s1 and r0's RECV_B mb0 s0 carry INPUT_GRAD of (mb0, s1).
TEST(SplitBackward, TransferNamesTheProducerOnBothEnds) {
  const ProgramSet set = parse_program_set(kSplit);
  const P2POp& send_f = set.programs[0].instrs[3].p2p[0];
  const P2POp& recv_b = set.programs[0].instrs[4].p2p[0];
  const P2POp& recv_f = set.programs[1].instrs[0].p2p[0];
  const P2POp& send_b = set.programs[1].instrs[7].p2p[0];
  const Transfer fwd{Role::FORWARD, Microbatch{0}, Stage{0}};
  const Transfer bwd{Role::INPUT_GRAD, Microbatch{0}, Stage{1}};
  EXPECT_EQ(carried_by(send_f), fwd);
  EXPECT_EQ(carried_by(recv_f), fwd);
  EXPECT_EQ(carried_by(send_b), bwd);
  EXPECT_EQ(carried_by(recv_b), bwd);
  EXPECT_STREQ(to_string(Role::INPUT_GRAD), "INPUT_GRAD");
}

TEST(SplitBackward, VerifierChecksIAndW) {
  EXPECT_TRUE(verify(parse_program_set(kSplit)).empty());
  // W before its I: the dX stash does not exist yet.
  std::string text = kSplit;
  const std::string iw = "r0 compute I mb0 s0\nr0 compute W mb0 s0\n";
  text.replace(text.find(iw), iw.size(), "r0 compute W mb0 s0\nr0 compute I mb0 s0\n");
  const auto v = verify(parse_program_set(text));
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].to_string(),
            "verify: r0 #7 compute: [happens-before] dX stash: I mb0 s0 (#8 compute) does not happen-before W mb0 s0: "
            "it comes later on compute");
  // The reduction before the last W: accumulated grads.
  std::string early = kSplit;
  const std::string tail = "r0 compute W mb0 s0\nr0 compute REDUCE_GRAD s0\n";
  early.replace(early.find(tail), tail.size(), "r0 compute REDUCE_GRAD s0\nr0 compute W mb0 s0\n");
  const auto v2 = verify(parse_program_set(early));
  ASSERT_FALSE(v2.empty());
  EXPECT_NE(v2[0].to_string().find("accumulated grads: W mb0 s0"), std::string::npos) << v2[0].to_string();
}

PipelineConfig zb(int32_t p, int32_t m, const std::string& extra = "") {
  return load_config_text(fmt::format("pipeline_parallel_size: {}\nmicro_batch_num: {}\nnum_layers: {}\nschedule: zb_h1\n"
                                      "cost: {{forward_ms_per_layer: 1, backward_ms_per_layer: 2}}\n{}",
                                      p, m, p, extra),
                          "zb");
}

// Qi et al. 2024, §3.1: ZB-H1's bubble is (p-1)(T_F + T_B - T_W) (T_B = input-grad backward),
// against 1F1B's (p-1)(T_F + T_B + T_W). Uniform T_F = T_B = T_W = 1 ms (backward 2 ms split
// 0.5), free communication: step = m(T_F+T_B+T_W) + (p-1)(T_F+T_B-T_W) = 3m + p - 1 ms.
TEST(SplitBackward, ZbH1MatchesThePublishedBubble) {
  for (auto [p, m] : {std::pair{2, 2}, std::pair{2, 5}, std::pair{4, 4}, std::pair{4, 8}, std::pair{3, 7}, std::pair{8, 16}}) {
    const sim::SimReport rep = sim::simulate(zb(p, m), {});
    const double step = rep.runs.at(0).metrics.step_time_ms;
    EXPECT_DOUBLE_EQ(step, 3.0 * m + (p - 1)) << "p=" << p << " m=" << m;
    // The same pipeline under 1F1B idles (p-1)·3 ms.
    PipelineConfig one = zb(p, m);
    one.schedule = ScheduleKind::ONE_F_ONE_B;
    EXPECT_DOUBLE_EQ(sim::simulate(one, {}).runs.at(0).metrics.step_time_ms, 3.0 * (m + p - 1)) << "p=" << p;
  }
}

// With HSDP the reductions follow the last W of each stage and still verify and simulate.
TEST(SplitBackward, ZbH1WithAsyncReductionsVerifies) {
  const PipelineConfig c = zb(4, 8, "data_parallel: {mode: hsdp, shard_size: 2, replicate_size: 2, reduce_grad: async}\n");
  for (bool expanded : {false, true}) {
    LowerOptions lo;
    lo.expanded = expanded;
    const ProgramSet set = compile(c, lo);
    const auto v = verify(set);
    EXPECT_TRUE(v.empty()) << (v.empty() ? "" : v[0].to_string());
  }
  EXPECT_GT(sim::simulate(c, {}).runs.at(0).metrics.step_time_ms, 0.0);
}

TEST(SplitBackward, CostSplitKeyIsChecked) {
  const PipelineConfig bad = load_config_text(
      "pipeline_parallel_size: 2\nmicro_batch_num: 2\nnum_layers: 2\nschedule: zb_h1\ncost: {backward_input_fraction: 1.5}\n",
      "zb");
  EXPECT_THROW(sim::simulate(bad, {}), ConfigError);
}

}  // namespace
}  // namespace ppstream
