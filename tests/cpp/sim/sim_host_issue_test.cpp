// cost.host_issue_ms (docs/simulate.md "Host issue time"): the host spends h per instruction,
// and an instruction is ready no earlier than its issue. Pinned against hand-derived steps;
// 0 (the default) changes no output.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "ppstream/config/config.h"
#include "ppstream/lower/lower.h"
#include "ppstream/sim/simulate.h"
#include "small_configs.h"

namespace ppstream::sim {
namespace {

SimReport run(const std::string& yaml, PlatformKind platform = PlatformKind::ASCEND_MINDSPORE) {
  SimOptions o;
  o.platform = platform;
  return simulate(load_config_text(yaml, "test"), o);
}

// PP1 GPipe of m = 3 microbatches: one rank whose program is F0 F1 F2 B0 B1 B2 OPT_STEP
// (no P2P, no DP; OPT_STEP costs optimizer_ms = 0).
const char* kOneRank = "pipeline_parallel_size: 1\nmicro_batch_num: 3\nnum_layers: 1\nschedule: gpipe\n";

TEST(SimHostIssue, OneRankProgramIsSevenInstructions) {
  const ProgramSet set = compile(load_config_text(kOneRank, "test"));
  ASSERT_EQ(set.programs.size(), 1u);
  EXPECT_EQ(set.programs[0].instrs.size(), 7u);  // the hand derivations below count on it
}

TEST(SimHostIssue, ZeroCostDeviceWaitsForTheHost) {
  // Every duration 0: the last instruction is issued at 7h and ends then.
  const std::string yaml = std::string(kOneRank) + "cost: {forward_ms_per_layer: 0, backward_ms_per_layer: 0, host_issue_ms: 0.25}\n";
  EXPECT_DOUBLE_EQ(run(yaml).runs.at(0).metrics.step_time_ms, 7 * 0.25);
}

TEST(SimHostIssue, BlockingHostPaysEveryIssue) {
  // cpu-serial: every instruction blocks the host, so the step is the durations (3 F of 1 ms,
  // 3 B of 2 ms) plus one issue per instruction.
  const std::string base = std::string(kOneRank) + "cost: {forward_ms_per_layer: 1, backward_ms_per_layer: 2";
  EXPECT_DOUBLE_EQ(run(base + "}\n", PlatformKind::CPU_SERIAL).runs.at(0).metrics.step_time_ms, 9.0);
  EXPECT_DOUBLE_EQ(run(base + ", host_issue_ms: 0.5}\n", PlatformKind::CPU_SERIAL).runs.at(0).metrics.step_time_ms,
                   9.0 + 7 * 0.5);
  // Non-blocking host: issued at 0.5, 1.0, …, 3.5; F0 runs 0.5–1.5 and every later instruction
  // is issued before its stream predecessor ends, so only the first issue shows.
  EXPECT_DOUBLE_EQ(run(base + ", host_issue_ms: 0.5}\n").runs.at(0).metrics.step_time_ms, 9.5);
}

TEST(SimHostIssue, PinnedOneFOneBStepMovesByOneIssue) {
  // The pinned 1F1B case (SimRun.OneFOneBBubble…): p = 4, m = 8, F = B = 1 ms, free
  // communication, step 2(m + p - 1) = 22 ms. With h = 1 µs every host stays ahead of its
  // device (about 40 instructions per rank, 40 µs of issue, against a first wait of 1 ms), so
  // only rank 0's first forward starts late, by h, and every later time moves with it.
  const std::string pipeline = "pipeline_parallel_size: 4\nmicro_batch_num: 8\nnum_layers: 4\nschedule: 1f1b\n";
  const SimReport base = run(pipeline + "cost: {forward_ms_per_layer: 1, backward_ms_per_layer: 1}\n");
  const SimReport late = run(pipeline + "cost: {forward_ms_per_layer: 1, backward_ms_per_layer: 1, host_issue_ms: 0.001}\n");
  EXPECT_DOUBLE_EQ(base.runs.at(0).metrics.step_time_ms, 22.0);
  EXPECT_NEAR(late.runs.at(0).metrics.step_time_ms, 22.001, 1e-9);
}

// PP2 GPipe, one microbatch, one layer per stage, F = 1, B = 2, P2P 0.5 ms, no DP. Programs
// (`ppstream compile`), k = the 0-based issue index:
//   r0: 0 F, 1 RECORD fwd_out, 2 p2p WAIT fwd_out, 3 p2p SEND_F, 4 RECORD done0, 5 compute WAIT done0,
//       6 p2p RECV_B, 7 RECORD done1, 8 compute WAIT done1, 9 B, 10 OPT_STEP
//   r1: 0 p2p RECV_F, 1 RECORD done0, 2 compute WAIT done0, 3 F, 4 B, 5 RECORD bwd_out,
//       6 p2p WAIT bwd_out, 7 p2p SEND_B, 8 RECORD done1, 9 compute WAIT done1, 10 OPT_STEP
// h = 0: r0 waits 1→1.5 and 1.5→5 (4.0 ms), r1 0→1.5 and 4.5→5 (2.0 ms); step 7.
// h = 0.25 (instruction k issued at (k+1)h): r0's F runs 0.25–1.25, SEND_F matches at 1.25 and
// ends 1.75; r0's WAIT done0, issued at 1.5, waits 1.5→1.75; r1's WAIT done0, issued at 0.75,
// waits 0.75→1.75; r1's F 1.75–2.75, B 2.75–4.75, SEND_B 4.75–5.25, its WAIT done1 4.75→5.25;
// r0's WAIT done1, issued at 2.25, waits 2.25→5.25, B 5.25–7.25. Waits r0 3.25, r1 1.5; step 7.25:
// a host that issues later starts its waits later, so the same events cost less waiting.
TEST(SimHostIssue, ComputeWaitsStartAtTheirIssue) {
  const std::string base = "pipeline_parallel_size: 2\nmicro_batch_num: 1\nnum_layers: 2\nschedule: gpipe\n"
                           "cost: {forward_ms_per_layer: 1, backward_ms_per_layer: 2, p2p_latency_ms: 0.5";
  const SimMetrics now = run(base + "}\n").runs.at(0).metrics;
  const SimMetrics late = run(base + ", host_issue_ms: 0.25}\n").runs.at(0).metrics;
  ASSERT_EQ(now.ranks.size(), 2u);
  ASSERT_EQ(late.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(now.step_time_ms, 7.0);
  EXPECT_DOUBLE_EQ(now.ranks[0].compute_wait_ms, 4.0);
  EXPECT_DOUBLE_EQ(now.ranks[1].compute_wait_ms, 2.0);
  EXPECT_DOUBLE_EQ(late.step_time_ms, 7.25);
  EXPECT_DOUBLE_EQ(late.ranks[0].compute_wait_ms, 3.25);
  EXPECT_DOUBLE_EQ(late.ranks[1].compute_wait_ms, 1.5);
}

TEST(SimHostIssue, ZeroLeavesEveryOutputUnchanged) {
  const std::string yaml = fixtures::interleaved_hsdp(2, 2, "inline") + R"(
straggler: {tails: [{ranks: [5], delay_ms: 7}]}
cost: {forward_ms_per_layer: 1, backward_ms_per_layer: 2, grad_bytes_per_layer: 1.0e8, replicate_bandwidth_gb_per_s: 10,
       p2p_latency_ms: 0.1)";
  for (const char* policy : {"inline", "async"})
    for (PlatformKind pk : {PlatformKind::ASCEND_MINDSPORE, PlatformKind::CPU_SERIAL}) {
      SimOptions o;
      o.platform = pk;
      o.cluster = true;
      o.policies = parse_policies(policy);
      auto strip = [](std::string s) {
        const auto at = s.find("\"engine_wall_ms\"");
        return at == std::string::npos ? s : s.substr(0, at) + s.substr(s.find_first_of(",}", at));
      };
      const std::string without = strip(report_json(simulate(load_config_text(yaml + "}\n", "test"), o)));
      const std::string zero = strip(report_json(simulate(load_config_text(yaml + ", host_issue_ms: 0}\n", "test"), o)));
      EXPECT_EQ(without, zero) << policy;
      const std::string some = strip(report_json(simulate(load_config_text(yaml + ", host_issue_ms: 0.3}\n", "test"), o)));
      EXPECT_NE(without, some) << policy << ": the comparison must see a nonzero cost";
    }
}

TEST(SimHostIssue, NegativeIsAConfigError) {
  EXPECT_THROW(run(std::string(kOneRank) + "cost: {host_issue_ms: -1}\n"), ConfigError);
}

}  // namespace
}  // namespace ppstream::sim
