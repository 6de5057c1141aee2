// Communication queues per profile (src/engine/platform.h CommQueues, docs/semantics.md
// "Communication queues"): under `ascend-mindspore` a BATCH's ops with one peer wait for the
// rank's earlier ops with that peer on any program stream (the P2P pair group's device stream);
// under `ascend-mindspore-one-comm-stream` every collective and BATCH of a rank waits for the
// one before it. Times are hand-derived: F = B = 10 ms, a BATCH 1 ms, a collective 30 ms.
#include <gtest/gtest.h>

#include <string>

#include "ppstream/engine/engine.h"
#include "ppstream/program/format.h"
#include "ppstream/verify/verify.h"

namespace ppstream {
namespace {

class Cost : public CostModel {
 public:
  double compute_ms(const Program&, const Instr& i) const override {
    return i.op == OpKind::F || i.op == OpKind::B ? 10.0 : 0.0;
  }
  double batch_ms(const Program&, const Instr&) const override { return 1.0; }
  double collective_ms(const Program&, const Instr&) const override { return 30.0; }
};

EngineResult run(const ProgramSet& set, PlatformKind k) {
  static const Cost cost;
  return run_engine(set, {k, &cost});
}

bool deadlock_flagged(const ProgramSet& set, PlatformKind k) {
  for (const auto& v : verify(set, {{k}, ""}))
    if (v.rule == "deadlock") return true;
  return false;
}

// Two P2P streams of r0 both talk to r1. r0's SEND_F (p2p.0, after F: posted at 10, ends 11) is
// issued before its RECV_B (p2p.1); each test adds r1's side.
constexpr const char* kR0TwoStreams = R"(world pp=2 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none
r0 compute F mb0 s0
r0 compute RECORD fwd_out[mb0,s0]
r0 p2p.0 WAIT fwd_out[mb0,s0]
r0 p2p.0 BATCH{SEND_F mb0 s0 ->r1}
r0 p2p.1 BATCH{RECV_B mb1 s0 <-r1}
)";

// r1 posts RECV_F on p2p.0 and SEND_B on p2p.1. Independent streams would match the backward
// pair at 0 (end 1). On Ascend both ranks' pair
// group r0–r1 is one device stream: each side's second batch posts when its first ends (11).
TEST(CommQueue, AscendPairGroupSerializesOpsWithOnePeerAcrossStreams) {
  const ProgramSet set = parse_program_set(std::string(kR0TwoStreams) +
                                           "r1 p2p.0 BATCH{RECV_F mb0 s1 <-r0}\n"
                                           "r1 p2p.1 BATCH{SEND_B mb1 s1 ->r0}\n");
  for (PlatformKind k : {PlatformKind::ASCEND_MINDSPORE, PlatformKind::ASCEND_ONE_COMM_STREAM}) {
    const EngineResult r = run(set, k);
    ASSERT_TRUE(r.completed) << format_deadlock(set, r);
    EXPECT_DOUBLE_EQ(r.timing[0][3].end_ms, 11.0) << to_string(k);
    EXPECT_DOUBLE_EQ(r.timing[0][4].start_ms, 0.0) << to_string(k);  // at its stream head at once
    EXPECT_DOUBLE_EQ(r.timing[0][4].end_ms, 12.0) << to_string(k);   // posted at 11, not 0
    EXPECT_DOUBLE_EQ(r.timing[1][1].end_ms, 12.0) << to_string(k);
  }
  EXPECT_TRUE(run(set, PlatformKind::STRICT).completed);
}

// Ops with different peers are on different pair groups: r1's batch with r2 does not wait for
// its earlier batch with r0 (ends 1 under ascend-mindspore), but does on the one stream (12).
TEST(CommQueue, AscendPairGroupsOfDifferentPeersAreIndependent) {
  const ProgramSet set = parse_program_set(R"(world pp=3 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none
r0 compute F mb0 s0
r0 compute RECORD fwd_out[mb0,s0]
r0 p2p.0 WAIT fwd_out[mb0,s0]
r0 p2p.0 BATCH{SEND_F mb0 s0 ->r1}
r1 p2p.0 BATCH{RECV_F mb0 s1 <-r0}
r1 p2p.1 BATCH{SEND_F mb1 s1 ->r2}
r2 p2p.1 BATCH{RECV_F mb1 s2 <-r1}
)");
  const EngineResult a = run(set, PlatformKind::ASCEND_MINDSPORE);
  ASSERT_TRUE(a.completed) << format_deadlock(set, a);
  EXPECT_DOUBLE_EQ(a.timing[1][1].end_ms, 1.0);
  const EngineResult one = run(set, PlatformKind::ASCEND_ONE_COMM_STREAM);
  ASSERT_TRUE(one.completed) << format_deadlock(set, one);
  EXPECT_DOUBLE_EQ(one.timing[1][1].end_ms, 12.0);
}

// r1 sends its backward first on one stream and receives the forward after it: r0's receive of
// that backward is queued behind r0's forward send, which r1 takes only after its send — a hang
// on Ascend that independent streams (strict) do not have. The verifier finds it under the
// ascend-mindspore profile, and the report names the pair group's stream.
TEST(CommQueue, AscendPairGroupOrderCanDeadlockWhatStrictRuns) {
  const ProgramSet set = parse_program_set(std::string(kR0TwoStreams) +
                                           "r1 p2p.0 BATCH{SEND_B mb1 s1 ->r0}\n"
                                           "r1 p2p.0 BATCH{RECV_F mb0 s1 <-r0}\n");
  EXPECT_TRUE(run(set, PlatformKind::STRICT).completed);
  EXPECT_FALSE(deadlock_flagged(set, PlatformKind::STRICT));
  const EngineResult r = run(set, PlatformKind::ASCEND_MINDSPORE);
  ASSERT_FALSE(r.completed);
  const std::string report = format_deadlock(set, r);
  EXPECT_NE(report.find("r0 #4 p2p.1 BATCH{RECV_B mb1 s0 <-r1}\n      waiting for the device stream of the P2P group "
                        "with r1: r0 #3 p2p.0 BATCH{SEND_F mb0 s0 ->r1}, issued earlier there, has not finished"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("cycle:"), std::string::npos) << report;
  EXPECT_TRUE(deadlock_flagged(set, PlatformKind::ASCEND_MINDSPORE));
}

// A send issued after a reduction (the reduction on `reduce`, the send on `p2p`): on its own
// stream the send goes at 20; on the rank's one communication stream it waits for the
// reduction (10 + 30 = 40) — multi_stream:true undoing the send-first fix.
TEST(CommQueue, OneCommStreamQueuesASendBehindAnEarlierReduction) {
  const ProgramSet set = parse_program_set(R"(world pp=2 vpp=1 shard=1 replicate=2 expanded=0 mode=hsdp policy=async
r0 p2p BATCH{RECV_B mb1 s0 <-r1}
r1 compute B mb0 s1
r1 compute RECORD compute_ready[s1]
r1 reduce WAIT compute_ready[s1]
r1 reduce REDUCE_GRAD s1
r1 compute B mb1 s1
r1 compute RECORD bwd_out[mb1,s1]
r1 p2p WAIT bwd_out[mb1,s1]
r1 p2p BATCH{SEND_B mb1 s1 ->r0}
)");
  const EngineResult a = run(set, PlatformKind::ASCEND_MINDSPORE);
  ASSERT_TRUE(a.completed) << format_deadlock(set, a);
  EXPECT_DOUBLE_EQ(a.timing[1][3].end_ms, 40.0);
  EXPECT_DOUBLE_EQ(a.timing[1][7].end_ms, 21.0);
  EXPECT_DOUBLE_EQ(a.timing[0][0].end_ms, 21.0);
  const EngineResult one = run(set, PlatformKind::ASCEND_ONE_COMM_STREAM);
  ASSERT_TRUE(one.completed) << format_deadlock(set, one);
  EXPECT_DOUBLE_EQ(one.timing[1][7].start_ms, 20.0);
  EXPECT_DOUBLE_EQ(one.timing[1][7].end_ms, 41.0);
  EXPECT_DOUBLE_EQ(one.timing[0][0].end_ms, 41.0);
}

// On the one stream a collective issued after a BATCH waits for it: r0's receive is matched
// when r1 sends at 10 (ends 11), so the reduction runs [11, 41] instead of [0, 30].
TEST(CommQueue, OneCommStreamHoldsACollectiveBehindAnEarlierBatch) {
  const ProgramSet set = parse_program_set(R"(world pp=2 vpp=1 shard=1 replicate=2 expanded=0 mode=hsdp policy=async
r0 p2p BATCH{RECV_B mb0 s0 <-r1}
r0 reduce REDUCE_GRAD s0
r1 compute B mb0 s1
r1 compute RECORD bwd_out[mb0,s1]
r1 p2p WAIT bwd_out[mb0,s1]
r1 p2p BATCH{SEND_B mb0 s1 ->r0}
)");
  const EngineResult a = run(set, PlatformKind::ASCEND_MINDSPORE);
  ASSERT_TRUE(a.completed) << format_deadlock(set, a);
  EXPECT_DOUBLE_EQ(a.timing[0][1].end_ms, 30.0);
  const EngineResult one = run(set, PlatformKind::ASCEND_ONE_COMM_STREAM);
  ASSERT_TRUE(one.completed) << format_deadlock(set, one);
  EXPECT_DOUBLE_EQ(one.timing[0][0].end_ms, 11.0);
  EXPECT_DOUBLE_EQ(one.timing[0][1].end_ms, 41.0);
}

TEST(CommQueue, ProfileNamesParseAndAllMeansTheVerificationProfiles) {
  EXPECT_EQ(parse_platform("ascend-mindspore-one-comm-stream"), PlatformKind::ASCEND_ONE_COMM_STREAM);
  EXPECT_STREQ(to_string(PlatformKind::ASCEND_ONE_COMM_STREAM), "ascend-mindspore-one-comm-stream");
  const auto all = parse_platform_list("all");
  EXPECT_EQ(all, (std::vector<PlatformKind>{PlatformKind::STRICT, PlatformKind::ASCEND_MINDSPORE,
                                            PlatformKind::CPU_SERIAL}));
  try {
    parse_platform_list("strict,ascend");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "platform 'ascend': expected strict, ascend-mindspore, cpu-serial, ascend-mindspore-one-comm-stream, "
                 "strict-timed, cpu-mccl or all");
  }
}

}  // namespace
}  // namespace ppstream
