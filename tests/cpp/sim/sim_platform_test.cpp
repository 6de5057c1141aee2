// `simulate --platform` (SimOptions::platform): the seed example under MindSpore's
// multi_stream:true (`ascend-mindspore-one-comm-stream`, every collective and BATCH of a rank on
// one communication stream) loses the async policy's send-first benefit — on PP rank 2 the
// sends of stage s2 queue behind the reduction of s6, so PP rank 1's backward receive waits
// again — while the default `ascend-mindspore` keeps it (docs/simulate.md, "Platforms").
#include <gtest/gtest.h>

#include "ppstream/config/config.h"
#include "ppstream/sim/simulate.h"

namespace ppstream::sim {
namespace {

// PP rank 1's longest compute-stream wait for a backward receive from PP rank 2 (ms).
double r1_backward_recv_wait_ms(const SimMetrics& m) {
  double longest = 0;
  for (const StreamWait& w : m.compute_waits)
    if (w.rank.v == 1 && w.kind == WaitKind::P2P && w.peer && w.peer->v == 2 && w.event.rfind("recv_B[", 0) == 0)
      longest = std::max(longest, w.ms());
  return longest;
}

TEST(SimPlatform, OneCommStreamUndoesSendFirstOnTheSeed) {
  const PipelineConfig cfg = load_config_file(PPSTREAM_SOURCE_DIR "/examples/seed-300b-moe.yaml");
  SimOptions o;
  o.policies = {ReducePolicy::ASYNC};
  const SimReport group = simulate(cfg, o);
  o.platform = PlatformKind::ASCEND_ONE_COMM_STREAM;
  const SimReport one = simulate(cfg, o);
  EXPECT_EQ(group.platform, PlatformKind::ASCEND_MINDSPORE);
  EXPECT_EQ(one.platform, PlatformKind::ASCEND_ONE_COMM_STREAM);
  const SimMetrics& g = group.runs.at(0).metrics;
  const SimMetrics& s = one.runs.at(0).metrics;
  // Default: no backward receive of PP rank 1 waits on a reduction (the longest, ~60 ms, is
  // PP rank 2's compute). One stream: PP rank 2's s6 reduction (~321 ms) holds the send.
  EXPECT_LT(r1_backward_recv_wait_ms(g), 100.0);
  EXPECT_GT(r1_backward_recv_wait_ms(s), 300.0);
  const RankMetrics& r1 = s.ranks.at(1);
  ASSERT_TRUE(r1.longest_compute_wait.has_value());
  EXPECT_EQ(r1.longest_compute_wait->event.rfind("recv_B[", 0), 0u) << r1.longest_compute_wait->event;
  EXPECT_GT(s.step_time_ms, g.step_time_ms + 300.0);
  ASSERT_TRUE(g.reduce_overlap_ratio && s.reduce_overlap_ratio);
  EXPECT_LT(*s.reduce_overlap_ratio, *g.reduce_overlap_ratio);
}

TEST(SimPlatform, StrictIsRefusedAndTheReportNamesThePlatform) {
  const PipelineConfig cfg = load_config_file(PPSTREAM_SOURCE_DIR "/examples/seed-300b-moe.yaml");
  SimOptions o;
  o.platform = PlatformKind::STRICT;
  EXPECT_THROW(simulate(cfg, o), std::invalid_argument);
  EXPECT_NE(simulate_json(cfg, "async", false, 1, std::nullopt, "", "", "ascend-mindspore-one-comm-stream")
                .find(R"("platform": "ascend-mindspore-one-comm-stream")"),
            std::string::npos);
  EXPECT_THROW(simulate_json(cfg, "async", false, 1, std::nullopt, "", "", "ascend"), std::invalid_argument);
}

}  // namespace
}  // namespace ppstream::sim
