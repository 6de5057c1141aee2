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
