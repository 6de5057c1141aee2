// Engine tests: hand-written programs whose timings and deadlocks are derived by hand in the
// comments (docs/semantics.md is the reference), never read back from the engine.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <utility>

#include "ppstream/engine/engine.h"
#include "ppstream/program/format.h"
#include "program_builder.h"
#include "synthetic_1f1b.h"

namespace ppstream {
namespace {

using testing::recv_b;
using testing::recv_f;
using testing::send_b;
using testing::send_f;
using testing::SetBuilder;

World pp_world(int pp) {
  World w;
  w.pp = pp;
  return w;
}

// F = 1 ms, B = 2 ms, every batch 0.5 ms, RESHARD/OPT_STEP 0; collectives per test.
class FakeCost : public CostModel {
 public:
  double collective = 0.0;
  std::map<int, double> arrival;  // rank → arrival delay
  double external = 0.0;
  double compute_ms(const Program&, const Instr& i) const override {
    return i.op == OpKind::F ? 1.0 : i.op == OpKind::B ? 2.0 : 0.0;
  }
  double batch_ms(const Program&, const Instr&) const override { return 0.5; }
  double collective_ms(const Program&, const Instr&) const override { return collective; }
  double arrival_delay_ms(const Program& p, const Instr&) const override {
    auto it = arrival.find(p.rank.v);
    return it == arrival.end() ? 0.0 : it->second;
  }
  double external_arrival_ms(const Program&, const Instr&) const override { return external; }
};

// One microbatch through two stages, with the lowering's events between compute and p2p.
ProgramSet two_stage_one_mb() {
  return SetBuilder(pp_world(2))
      .r(0)
      .F(0, 0)                                   // #0
      .record("fwd_out[mb0,s0]")                 // #1
      .wait("fwd_out[mb0,s0]", "p2p")            // #2
      .batch({send_f(0, 0, 1)})                  // #3
      .batch({recv_b(0, 0, 1)})                  // #4
      .record("recv_B[mb0,s0]", "p2p")           // #5
      .wait("recv_B[mb0,s0]")                    // #6
      .B(0, 0)                                   // #7
      .r(1)
      .batch({recv_f(0, 1, 0)})                  // #0
      .record("recv_F[mb0,s1]", "p2p")           // #1
      .wait("recv_F[mb0,s1]")                    // #2
      .F(0, 1)                                   // #3
      .B(0, 1)                                   // #4
      .record("bwd_out[mb0,s1]")                 // #5
      .wait("bwd_out[mb0,s1]", "p2p")            // #6
      .batch({send_b(0, 1, 0)})                  // #7
      .build();
}

TEST(EngineBasics, TwoRanksExchangeABatchUnderStrict) {
  const EngineResult r = run_engine(two_stage_one_mb());
  ASSERT_TRUE(r.completed) << format_deadlock(two_stage_one_mb(), r);
  EXPECT_TRUE(r.blocked.empty());
  EXPECT_EQ(r.makespan_ms, 0.0);
  ASSERT_EQ(r.timing.size(), 2u);
  ASSERT_EQ(r.timing[0].size(), 8u);
  ASSERT_EQ(r.timing[1].size(), 8u);
  for (const auto& prog : r.timing)
    for (const InstrTiming& t : prog) {
      EXPECT_EQ(t.issue_ms, 0.0);
      EXPECT_EQ(t.end_ms, 0.0);
    }
  // 16 instructions complete: one engine event each.
  EXPECT_EQ(r.events_processed, 16);
}

TEST(EngineBasics, StrictIgnoresTheCostModel) {
  FakeCost cost;
  const EngineResult r = run_engine(two_stage_one_mb(), {PlatformKind::STRICT, &cost});
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.makespan_ms, 0.0);
}

// Hand derivation (F=1, B=2, batch=0.5), ascend-mindspore:
//   r0 F [0,1]; RECORD fwd_out @1; p2p WAIT starts 1; SEND_F batch posted 1, r1's RECV_F was
//   posted at 0 → matched 1 → both batches end 1.5. r1 F [1.5,2.5], B [2.5,4.5], RECORD 4.5,
//   p2p WAIT 4.5, SEND_B posted 4.5; r0's RECV_B posted 1.5 → matched 4.5 → ends 5.0.
//   r0 compute WAIT recv_B ready at 1 (after RECORD), starts 5.0; B [5,7]. Makespan 7.
TEST(EngineTiming, TwoStagesOneMicrobatchAscend) {
  FakeCost cost;
  const EngineResult r = run_engine(two_stage_one_mb(), {PlatformKind::ASCEND_MINDSPORE, &cost});
  ASSERT_TRUE(r.completed);
  EXPECT_DOUBLE_EQ(r.makespan_ms, 7.0);
  const auto& r0 = r.timing[0];
  const auto& r1 = r.timing[1];
  EXPECT_DOUBLE_EQ(r0[0].end_ms, 1.0);
  EXPECT_DOUBLE_EQ(r0[3].start_ms, 1.0);
  EXPECT_DOUBLE_EQ(r0[3].end_ms, 1.5);
  EXPECT_DOUBLE_EQ(r1[0].start_ms, 0.0);  // RECV_F posted at once …
  EXPECT_DOUBLE_EQ(r1[0].end_ms, 1.5);    // … and done when matched + 0.5
  EXPECT_DOUBLE_EQ(r1[3].start_ms, 1.5);
  EXPECT_DOUBLE_EQ(r1[4].end_ms, 4.5);
  EXPECT_DOUBLE_EQ(r0[4].start_ms, 1.5);  // RECV_B posted after the SEND_F batch (p2p FIFO)
  EXPECT_DOUBLE_EQ(r0[4].end_ms, 5.0);
  EXPECT_DOUBLE_EQ(r0[6].ready_ms, 1.0);  // compute WAIT reached the head at 1 …
  EXPECT_DOUBLE_EQ(r0[6].start_ms, 5.0);  // … and waited 4 ms for recv_B
  EXPECT_DOUBLE_EQ(r0[7].start_ms, 5.0);
  EXPECT_DOUBLE_EQ(r0[7].end_ms, 7.0);
}

// cpu-serial: the host issues the next instruction only after the previous one completed.
//   r0 F [0,1]; r0 RECORD/WAIT no-ops at 1; SEND_F posted 1 ↔ r1 RECV_F posted 0 → ends 1.5;
//   r0 RECV_B issued and posted 1.5. r1: RECORD/WAIT 1.5, F [1.5,2.5], B [2.5,4.5], SEND_B 4.5
//   → ends 5.0; r0 B [5,7].
TEST(EngineTiming, CpuSerialIssuesAfterCompletion) {
  FakeCost cost;
  const EngineResult r = run_engine(two_stage_one_mb(), {PlatformKind::CPU_SERIAL, &cost});
  ASSERT_TRUE(r.completed);
  EXPECT_DOUBLE_EQ(r.makespan_ms, 7.0);
  EXPECT_DOUBLE_EQ(r.timing[0][3].issue_ms, 1.0);
  EXPECT_DOUBLE_EQ(r.timing[0][4].issue_ms, 1.5);
  EXPECT_DOUBLE_EQ(r.timing[1][4].issue_ms, 2.5);
  EXPECT_DOUBLE_EQ(r.timing[0][7].end_ms, 7.0);
}

// A WAIT on another stream waits for the RECORD to fire, i.e. for all earlier work on the
// recording stream: F (1 ms) then RECORD fires at 1; the WAIT reached its head at 0.
TEST(EngineBasics, EventFiresWhenEarlierWorkOnItsStreamCompletes) {
  const ProgramSet set = SetBuilder(pp_world(1))
                             .r(0)
                             .F(0, 0)
                             .F(1, 0)
                             .record("e")
                             .wait("e", "side")
                             .F(2, 0, "side")
                             .build();
  FakeCost cost;
  const EngineResult r = run_engine(set, {PlatformKind::ASCEND_MINDSPORE, &cost});
  ASSERT_TRUE(r.completed);
  EXPECT_DOUBLE_EQ(r.timing[0][2].end_ms, 2.0);    // RECORD after two forwards
  EXPECT_DOUBLE_EQ(r.timing[0][3].ready_ms, 0.0);  // WAIT at the head of `side` at once
  EXPECT_DOUBLE_EQ(r.timing[0][3].start_ms, 2.0);  // fired at 2
  EXPECT_DOUBLE_EQ(r.timing[0][4].start_ms, 2.0);
  EXPECT_DOUBLE_EQ(r.makespan_ms, 3.0);
}

TEST(EngineBasics, WaitFollowsTheMostRecentRecordBeforeIt) {
  // e is recorded on compute after two forwards (done at 2 ms), then again on x after one
  // forward (done at 1 ms). The WAIT comes after both in program order: it synchronizes with
  // the later RECORD (#4, CUDA/ACL), so `side` starts at 1 ms, not at 2 (the first record).
  const ProgramSet set = SetBuilder(pp_world(1))
                             .r(0)
                             .F(0, 0)           // #0 compute [0, 1)
                             .F(1, 0)           // #1 compute [1, 2)
                             .record("e")       // #2 compute, completes at 2
                             .F(2, 0, "x")      // #3 x [0, 1)
                             .record("e", "x")  // #4 x, completes at 1
                             .wait("e", "side")  // #5
                             .F(3, 0, "side")   // #6 side [1, 2)
                             .build();
  FakeCost cost;
  const EngineResult r = run_engine(set, {PlatformKind::ASCEND_MINDSPORE, &cost});
  ASSERT_TRUE(r.completed);
  EXPECT_DOUBLE_EQ(r.timing[0][4].end_ms, 1.0);
  EXPECT_DOUBLE_EQ(r.timing[0][5].start_ms, 1.0);
  EXPECT_DOUBLE_EQ(r.timing[0][6].end_ms, 2.0);
}

// RECV first on both ranks: fine when every op of a batch is posted at once (strict), a
// cycle when each op is a blocking rendezvous in listed order (cpu-serial).
ProgramSet recv_first_batches() {
  return SetBuilder(pp_world(2))
      .r(0)
      .batch({recv_b(0, 0, 1), send_f(1, 0, 1)})
      .r(1)
      .batch({recv_f(1, 1, 0), send_b(0, 1, 0)})
      .build();
}

TEST(EngineDeadlock, RecvFirstBatchIsFineUnderStrict) {
  EXPECT_TRUE(run_engine(recv_first_batches()).completed);
}

TEST(EngineDeadlock, RecvFirstBatchDeadlocksUnderCpuSerial) {
  const ProgramSet set = recv_first_batches();
  const EngineResult r = run_engine(set, {PlatformKind::CPU_SERIAL, nullptr});
  ASSERT_FALSE(r.completed);
  ASSERT_EQ(r.blocked.size(), 2u);
  EXPECT_EQ(r.blocked[0].rank, Rank{0});
  EXPECT_EQ(r.blocked[0].stream, "p2p");
  EXPECT_EQ(r.blocked[0].index, 0);
  EXPECT_EQ(r.blocked[0].waits_on_rank, Rank{1});
  EXPECT_NE(r.blocked[0].waiting_for.find("peer r1 has not reached SEND_B mb0 s1 ->r0"), std::string::npos)
      << r.blocked[0].waiting_for;
  EXPECT_EQ(r.blocked[1].waits_on_rank, Rank{0});
  EXPECT_EQ(r.cycle, (std::vector<Rank>{Rank{0}, Rank{1}}));
  EXPECT_EQ(r.cycle_blocked, (std::vector<int32_t>{0, 1}));
  const std::string report = format_deadlock(set, r);
  EXPECT_NE(report.find("deadlock: 2 blocked stream heads"), std::string::npos) << report;
  EXPECT_NE(report.find("cycle: r0 p2p #0 -> r1 p2p #0 -> r0 p2p #0"), std::string::npos) << report;
}

// Each rank receives before it sends, in separate batches on one FIFO stream: a true cycle.
TEST(EngineDeadlock, TrueCycleUnderStrictIsReported) {
  const ProgramSet set = SetBuilder(pp_world(2))
                             .r(0)
                             .batch({recv_b(0, 0, 1)})
                             .batch({send_f(0, 0, 1)})
                             .r(1)
                             .batch({recv_f(0, 1, 0)})
                             .batch({send_b(0, 1, 0)})
                             .build();
  const EngineResult r = run_engine(set);
  ASSERT_FALSE(r.completed);
  ASSERT_EQ(r.blocked.size(), 2u);
  EXPECT_EQ(r.blocked[0].text, "p2p BATCH{RECV_B mb0 s0 <-r1}");
  EXPECT_EQ(r.blocked[0].waiting_for, "peer r1 has not posted SEND_B mb0 s1 ->r0: r1 #1 p2p BATCH{SEND_B mb0 s1 ->r0}");
  EXPECT_EQ(r.blocked[1].waiting_for, "peer r0 has not posted SEND_F mb0 s0 ->r1: r0 #1 p2p BATCH{SEND_F mb0 s0 ->r1}");
  EXPECT_EQ(r.cycle, (std::vector<Rank>{Rank{0}, Rank{1}}));
  // Never started: negative times; the unblocked-but-never-reached batches too.
  EXPECT_LT(r.timing[0][1].start_ms, 0.0);
  EXPECT_EQ(r.timing[0][1].issue_ms, 0.0);
  EXPECT_LT(r.timing[0][1].ready_ms, 0.0);
}

TEST(EngineDeadlock, WaitBeforeRecordOnOneStreamWaitsOnItself) {
  const ProgramSet set = SetBuilder(pp_world(1)).r(0).wait("e").record("e").build();
  const EngineResult r = run_engine(set);
  ASSERT_FALSE(r.completed);
  ASSERT_EQ(r.blocked.size(), 1u);
  EXPECT_EQ(r.blocked[0].waiting_for, "event e, recorded by r0 #1 compute RECORD e, which has not run");
  EXPECT_EQ(r.cycle, (std::vector<Rank>{Rank{0}}));
  EXPECT_EQ(r.cycle_blocked, (std::vector<int32_t>{0}));
}

TEST(EngineDeadlock, WaitOnNeverRecordedEventHasNoCycle) {
  const ProgramSet set = SetBuilder(pp_world(1)).r(0).F(0, 0).wait("ghost").F(1, 0).build();
  const EngineResult r = run_engine(set);
  ASSERT_FALSE(r.completed);
  ASSERT_EQ(r.blocked.size(), 1u);
  EXPECT_EQ(r.blocked[0].index, 1);
  EXPECT_EQ(r.blocked[0].waiting_for, "event ghost never recorded on r0");
  EXPECT_FALSE(r.blocked[0].waits_on_rank.has_value());
  EXPECT_TRUE(r.cycle.empty());
  EXPECT_DOUBLE_EQ(r.timing[0][0].end_ms, 0.0);
  EXPECT_NE(format_deadlock(set, r).find("no waiting cycle"), std::string::npos);
  // What happened to each instruction: F ran (at time 0); the WAIT was issued and reached its
  // stream's head but never started; the F behind it was issued (a WAIT blocks its stream, not
  // the host) but never reached the head.
  const InstrTiming &f = r.timing[0][0], &w = r.timing[0][1], &g = r.timing[0][2];
  EXPECT_TRUE(f.issued() && f.at_head() && f.started() && f.finished());
  EXPECT_TRUE(w.issued() && w.at_head());
  EXPECT_FALSE(w.started() || w.finished());
  EXPECT_TRUE(g.issued());
  EXPECT_FALSE(g.at_head() || g.started() || g.finished());
  EXPECT_FALSE(happened(kNotYet));
  EXPECT_TRUE(happened(0.0));
}

// Two streams of one rank wait on each other's events: a cycle among (rank, stream) heads.
TEST(EngineDeadlock, CrossStreamEventCycle) {
  const ProgramSet set =
      SetBuilder(pp_world(1)).r(0).wait("a").record("b").wait("b", "p2p").record("a", "p2p").build();
  const EngineResult r = run_engine(set);
  ASSERT_FALSE(r.completed);
  ASSERT_EQ(r.blocked.size(), 2u);  // compute #0 and p2p #2 (streams in name order)
  EXPECT_EQ(r.blocked[0].stream, "compute");
  EXPECT_EQ(r.blocked[1].stream, "p2p");
  EXPECT_EQ(r.cycle, (std::vector<Rank>{Rank{0}}));
  EXPECT_EQ(r.cycle_blocked.size(), 2u);
}

TEST(EngineDeadlock, UnpairedSendNamesTheChannelCounts) {
  const ProgramSet set = SetBuilder(pp_world(2))
                             .r(0)
                             .batch({send_f(0, 0, 1)})
                             .batch({send_f(1, 0, 1)})
                             .r(1)
                             .batch({recv_f(0, 1, 0)})
                             .build();
  const EngineResult r = run_engine(set);
  ASSERT_FALSE(r.completed);
  ASSERT_EQ(r.blocked.size(), 1u);
  EXPECT_EQ(r.blocked[0].index, 1);
  EXPECT_EQ(r.blocked[0].waiting_for,
            "peer r1 never posts a mirror of SEND_F mb1 s0 ->r1: it is the 2nd SEND op on the channel, r1 posts "
            "only 1 RECV_F");
  EXPECT_TRUE(r.cycle.empty());
}

TEST(EngineBasics, UnknownPeerIsStructuralError) {
  const ProgramSet set = SetBuilder(pp_world(2)).r(0).batch({send_f(0, 0, 7)}).r(1).build();
  EXPECT_THROW(run_engine(set), std::invalid_argument);
}

TEST(EngineBasics, NegativeCostIsRejected) {
  class Bad : public CostModel {
    double compute_ms(const Program&, const Instr&) const override { return -1.0; }
  } bad;
  const ProgramSet set = SetBuilder(pp_world(1)).r(0).F(0, 0).build();
  EXPECT_THROW(run_engine(set, {PlatformKind::ASCEND_MINDSPORE, &bad}), std::invalid_argument);
}

World fsdp_world(int shard, int replicate, bool expanded) {
  World w;
  w.shard = shard;
  w.replicate = replicate;
  w.expanded = expanded;
  return w;
}

// Expanded shard group {r0, r1}: r1 arrives 3 ms late; the all-gather takes 2 ms after the
// last arrival, so both end at 0 + 3 + 2 = 5, and r0's F after it starts at 5.
TEST(EngineCollective, ExpandedGroupWaitsForTheLateMember) {
  const ProgramSet set = SetBuilder(fsdp_world(2, 1, true), DPMode::FSDP, ReducePolicy::INLINE)
                             .r(0)
                             .unshard(0, "compute")
                             .F(0, 0)
                             .r(1)
                             .unshard(0, "compute")
                             .build();
  FakeCost cost;
  cost.collective = 2.0;
  cost.arrival[1] = 3.0;
  const EngineResult r = run_engine(set, {PlatformKind::ASCEND_MINDSPORE, &cost});
  ASSERT_TRUE(r.completed);
  EXPECT_DOUBLE_EQ(r.timing[0][0].start_ms, 0.0);
  EXPECT_DOUBLE_EQ(r.timing[0][0].end_ms, 5.0);
  EXPECT_DOUBLE_EQ(r.timing[1][0].end_ms, 5.0);
  EXPECT_DOUBLE_EQ(r.timing[0][1].start_ms, 5.0);
  EXPECT_DOUBLE_EQ(r.makespan_ms, 6.0);
}

// HSDP 2×2, expanded (rank = replicate_index*2 + shard_index): shard groups {0,1},{2,3},
// replicate groups {0,2},{1,3}. r1 is 4 ms late. Reduce-scatter {0,1} completes at 4, {2,3}
// at 0; all-reduce {0,2} at max(4,0)=4, {1,3} at 4; +1 ms: every rank ends at 5 — r2 and r3
// share no group with r1 yet inherit its delay through the second phase.
TEST(EngineCollective, ReduceGradIsReduceScatterThenAllReduce) {
  SetBuilder b(fsdp_world(2, 2, true), DPMode::HSDP, ReducePolicy::INLINE);
  for (int r = 0; r < 4; ++r) b.r(r).reduce(0, "compute");
  FakeCost cost;
  cost.collective = 1.0;
  cost.arrival[1] = 4.0;
  const EngineResult res = run_engine(b.build(), {PlatformKind::ASCEND_MINDSPORE, &cost});
  ASSERT_TRUE(res.completed);
  for (int r = 0; r < 4; ++r) EXPECT_DOUBLE_EQ(res.timing[r][0].end_ms, 5.0) << "r" << r;
}

// Replicate-only (DDP-like, shard 1): r2's delay reaches r0 (same replicate group {0,2}) but
// not r1/r3 whose group {1,3} has no straggler: 0 + 1 ms.
TEST(EngineCollective, ShardOneReducesOnlyInTheReplicateGroup) {
  // shard=1, replicate=2, pp=2: dp=2, rank = pp_rank*2 + replicate_index.
  World w = fsdp_world(1, 2, true);
  w.pp = 2;
  SetBuilder b2(w, DPMode::HSDP, ReducePolicy::INLINE);
  for (int r = 0; r < 4; ++r) b2.r(r).reduce(r / 2, "compute");
  FakeCost cost;
  cost.collective = 1.0;
  cost.arrival[1] = 2.0;
  const EngineResult res = run_engine(b2.build(), {PlatformKind::ASCEND_MINDSPORE, &cost});
  ASSERT_TRUE(res.completed);
  EXPECT_DOUBLE_EQ(res.timing[0][0].end_ms, 3.0);  // group {r0, r1} (pp_rank 0)
  EXPECT_DOUBLE_EQ(res.timing[1][0].end_ms, 3.0);
  EXPECT_DOUBLE_EQ(res.timing[2][0].end_ms, 1.0);  // group {r2, r3} (pp_rank 1)
  EXPECT_DOUBLE_EQ(res.timing[3][0].end_ms, 1.0);
}

// Non-expanded: only the local member is in the set; the slowest outside member arrives at
// external_arrival_ms (3), later than the local arrival delay (1): 0 + 3 + 2 = 5.
TEST(EngineCollective, NonExpandedUsesExternalArrival) {
  const ProgramSet set =
      SetBuilder(fsdp_world(2, 2, false), DPMode::HSDP, ReducePolicy::INLINE).r(0).reduce(0).F(0, 0, "reduce").build();
  FakeCost cost;
  cost.collective = 2.0;
  cost.arrival[0] = 1.0;
  cost.external = 3.0;
  const EngineResult r = run_engine(set, {PlatformKind::ASCEND_MINDSPORE, &cost});
  ASSERT_TRUE(r.completed);
  EXPECT_DOUBLE_EQ(r.timing[0][0].end_ms, 5.0);
  EXPECT_DOUBLE_EQ(r.timing[0][1].start_ms, 5.0);  // the issuing stream was occupied
  cost.arrival[0] = 4.0;                           // now the local member is the late one
  EXPECT_DOUBLE_EQ(run_engine(set, {PlatformKind::ASCEND_MINDSPORE, &cost}).timing[0][0].end_ms, 6.0);
}

TEST(EngineCollective, MissingCollectiveOnOneMemberDeadlocks) {
  const ProgramSet set = SetBuilder(fsdp_world(2, 1, true), DPMode::FSDP, ReducePolicy::INLINE)
                             .r(0)
                             .unshard(0)
                             .unshard(0)
                             .r(1)
                             .unshard(0)
                             .build();
  const EngineResult r = run_engine(set);
  ASSERT_FALSE(r.completed);
  ASSERT_EQ(r.blocked.size(), 1u);
  EXPECT_EQ(r.blocked[0].index, 1);
  EXPECT_EQ(r.blocked[0].waiting_for,
            "the 2nd shard-group collective (r0..r1) waits for r1 (issues only 1 shard-group collectives)");
  EXPECT_EQ(r.blocked[0].waits_on_rank, Rank{1});
}

// An expanded 2×1 FSDP group where r1's collective sits behind a WAIT that never fires:
// r0 waits on r1's blocked head.
TEST(EngineCollective, BlockedMemberFormsTheEdge) {
  const ProgramSet set = SetBuilder(fsdp_world(2, 1, true), DPMode::FSDP, ReducePolicy::INLINE)
                             .r(0)
                             .unshard(0)
                             .r(1)
                             .wait("never", "fsdp")
                             .unshard(0)
                             .build();
  const EngineResult r = run_engine(set);
  ASSERT_FALSE(r.completed);
  ASSERT_EQ(r.blocked.size(), 2u);
  EXPECT_EQ(r.blocked[0].waiting_for, "the 1st shard-group collective (r0..r1) waits for r1 #1 fsdp UNSHARD s0");
  EXPECT_EQ(r.blocked[0].waits_on, 1);
  EXPECT_TRUE(r.cycle.empty());
}

// Synthetic 1F1B, 2 stages × 2 microbatches, F=1 B=2 batch=0.5, derived by hand:
//   r0 F0 [0,1] → SEND_F0 posted 1, matched with r1's RECV_F0 (posted 0) → ends 1.5.
//   r0 F1 [1,2]; its batch {SEND_F1, RECV_B0} is posted at 2.
//   r1 F0 [1.5,2.5], B0 [2.5,4.5]; batch {SEND_B0, RECV_F1} posted 4.5 → both batches end 5.0.
//   r1 F1 [5,6], B1 [6,8], SEND_B1 posted 8. r0 B0 [5,7]; r0's RECV_B1 was posted at 5.0
//   → matched 8 → ends 8.5; r0 B1 [8.5,10.5]. Makespan 10.5.
TEST(EngineTiming, Synthetic1F1BTwoStagesMatchesHandDerivation) {
  testing::Synthetic1F1B cfg;
  cfg.pp = 2;
  cfg.microbatches = 2;
  const ProgramSet set = testing::make_synthetic_1f1b(cfg);
  FakeCost cost;
  const EngineResult r = run_engine(set, {PlatformKind::ASCEND_MINDSPORE, &cost});
  ASSERT_TRUE(r.completed) << format_deadlock(set, r);
  EXPECT_DOUBLE_EQ(r.makespan_ms, 10.5);
  auto find = [&](int prog, OpKind k, int mb) {
    const auto& ins = set.programs[prog].instrs;
    for (size_t i = 0; i < ins.size(); ++i)
      if (ins[i].op == k && ins[i].mb.v == mb) return r.timing[prog][i];
    ADD_FAILURE() << "missing instruction";
    return InstrTiming{};
  };
  EXPECT_DOUBLE_EQ(find(1, OpKind::F, 0).start_ms, 1.5);
  EXPECT_DOUBLE_EQ(find(1, OpKind::B, 0).end_ms, 4.5);
  EXPECT_DOUBLE_EQ(find(1, OpKind::F, 1).start_ms, 5.0);
  EXPECT_DOUBLE_EQ(find(0, OpKind::B, 0).start_ms, 5.0);
  EXPECT_DOUBLE_EQ(find(0, OpKind::B, 1).start_ms, 8.5);
  EXPECT_DOUBLE_EQ(find(0, OpKind::B, 1).end_ms, 10.5);
}

TEST(EngineDeterminism, SameInputSameTimings) {
  testing::Synthetic1F1B cfg;
  cfg.pp = 4;
  cfg.microbatches = 6;
  cfg.world.shard = 2;
  cfg.world.replicate = 2;
  cfg.world.expanded = true;
  cfg.mode = DPMode::HSDP;
  cfg.policy = ReducePolicy::ASYNC;
  const ProgramSet set = testing::make_synthetic_1f1b(cfg);
  FakeCost cost;
  cost.collective = 3.0;
  cost.arrival[5] = 2.5;
  const EngineResult a = run_engine(set, {PlatformKind::ASCEND_MINDSPORE, &cost});
  const EngineResult b = run_engine(set, {PlatformKind::ASCEND_MINDSPORE, &cost});
  ASSERT_TRUE(a.completed) << format_deadlock(set, a);
  ASSERT_EQ(a.timing.size(), b.timing.size());
  for (size_t p = 0; p < a.timing.size(); ++p)
    for (size_t i = 0; i < a.timing[p].size(); ++i) {
      EXPECT_EQ(a.timing[p][i].start_ms, b.timing[p][i].start_ms);
      EXPECT_EQ(a.timing[p][i].end_ms, b.timing[p][i].end_ms);
    }
  EXPECT_EQ(a.events_processed, b.events_processed);
  EXPECT_EQ(a.makespan_ms, b.makespan_ms);
}

TEST(EngineBasics, SyntheticSetsRunUnderEveryPlatform) {
  testing::Synthetic1F1B cfg;
  cfg.pp = 4;
  cfg.microbatches = 5;
  cfg.world.shard = 2;
  cfg.world.replicate = 1;
  cfg.world.expanded = true;
  cfg.mode = DPMode::FSDP;
  cfg.policy = ReducePolicy::ASYNC;
  const ProgramSet set = testing::make_synthetic_1f1b(cfg);
  for (auto k : {PlatformKind::STRICT, PlatformKind::ASCEND_MINDSPORE, PlatformKind::CPU_SERIAL}) {
    const EngineResult r = run_engine(set, {k, nullptr});
    EXPECT_TRUE(r.completed) << to_string(k) << "\n" << format_deadlock(set, r);
  }
}

TEST(EngineBasics, PlatformNamesRoundTrip) {
  for (auto k : {PlatformKind::STRICT, PlatformKind::ASCEND_MINDSPORE, PlatformKind::CPU_SERIAL})
    EXPECT_EQ(parse_platform(to_string(k)), k);
  EXPECT_FALSE(parse_platform("ascend").has_value());
}

// CostModel::launch_delay_ms (docs/semantics.md "Execution", launch delay): an instruction starts
// its launch delay after its start condition holds — after what it depends on, not after the
// previous issue (host_issue_ms). F = 1 ms, B = 2 ms, every batch 0.5 ms, collectives 0.25 ms;
// launch and arrival delays by (rank, instruction index).
class DelayCost : public CostModel {
 public:
  std::map<std::pair<int, int>, double> launch, arrival;
  double compute_ms(const Program&, const Instr& i) const override { return i.op == OpKind::F ? 1.0 : i.op == OpKind::B ? 2.0 : 0.0; }
  double batch_ms(const Program&, const Instr&) const override { return 0.5; }
  double collective_ms(const Program&, const Instr&) const override { return 0.25; }
  double arrival_delay_ms(const Program& p, const Instr& i) const override { return at(arrival, p, i); }
  double launch_delay_ms(const Program& p, const Instr& i) const override { return at(launch, p, i); }

 private:
  static double at(const std::map<std::pair<int, int>, double>& m, const Program& p, const Instr& i) {
    const auto it = m.find({p.rank.v, static_cast<int>(&i - p.instrs.data())});
    return it == m.end() ? 0.0 : it->second;
  }
};

// two_stage_one_mb() (makespan 7 without delays) with delays: r0 F 0.5, r0 SEND_F batch 2, r1 compute WAIT 0.1, r1 F 0.25.
//   r0 F [0.5, 1.5]; RECORD 1.5; p2p WAIT (parked since 0) starts 1.5; SEND_F ready 1.5, posted
//   1.5 + 2 = 3.5; r1's RECV_F posted at 0 → matched 3.5 → both end 4.0.
//   r1 RECORD recv_F 4.0; compute WAIT parked since 0, its event at 4.0 → starts 4.1 (its delay
//   counted once, after the event); F ready 4.1 → [4.35, 5.35]; B [5.35, 7.35]; RECORD 7.35;
//   p2p WAIT starts 7.35; SEND_B posted 7.35. r0 RECV_B posted at 4.0 (after SEND_F) → matched
//   7.35 → ends 7.85; RECORD 7.85; compute WAIT starts 7.85; B [7.85, 9.85]. Makespan 9.85.
// host_issue_ms of the same sizes would be hidden (every instruction is issued by 0.5·8 = 4 ms,
// long before r1's F can start): the delay counts from the dependencies, not the issue.
TEST(EngineLaunchDelay, CountsFromTheStartCondition) {
  DelayCost cost;
  cost.launch = {{{0, 0}, 0.5}, {{0, 3}, 2.0}, {{1, 2}, 0.1}, {{1, 3}, 0.25}};
  for (PlatformKind pk : {PlatformKind::STRICT_TIMED, PlatformKind::ASCEND_MINDSPORE}) {
    const EngineResult r = run_engine(two_stage_one_mb(), {pk, &cost});
    ASSERT_TRUE(r.completed) << to_string(pk);
    const auto& r0 = r.timing[0];
    const auto& r1 = r.timing[1];
    EXPECT_DOUBLE_EQ(r0[0].start_ms, 0.5) << to_string(pk);
    EXPECT_DOUBLE_EQ(r0[0].end_ms, 1.5) << to_string(pk);
    EXPECT_DOUBLE_EQ(r0[3].ready_ms, 1.5) << to_string(pk);
    EXPECT_DOUBLE_EQ(r0[3].start_ms, 3.5) << to_string(pk);
    EXPECT_DOUBLE_EQ(r1[0].end_ms, 4.0) << to_string(pk);
    EXPECT_DOUBLE_EQ(r1[2].start_ms, 4.1) << to_string(pk);
    EXPECT_NEAR(r1[3].start_ms, 4.35, 1e-12) << to_string(pk);
    EXPECT_NEAR(r1[4].end_ms, 7.35, 1e-12) << to_string(pk);
    EXPECT_NEAR(r0[4].start_ms, 4.0, 1e-12) << to_string(pk);
    EXPECT_NEAR(r0[4].end_ms, 7.85, 1e-12) << to_string(pk);
    EXPECT_NEAR(r.makespan_ms, 9.85, 1e-12) << to_string(pk);
  }
  // The same sizes as host issue time: hidden but for the first issue (r0's F at 0.5 …).
  class IssueCost : public DelayCost {
   public:
    double launch_delay_ms(const Program&, const Instr&) const override { return 0.0; }
    double host_issue_ms(const Program&, const Instr&) const override { return 0.5; }
  } issue;
  EXPECT_LT(run_engine(two_stage_one_mb(), {PlatformKind::STRICT_TIMED, &issue}).makespan_ms, 9.0);
}

// A collective member arrives its launch delay after its start condition, then its arrival
// delay: r1's F [0, 1], RECORD 1, dp WAIT 1, COLLECTIVE starts 1 + 0.5 (launch) and arrives
// + 0.25 (arrival) = 1.75; r0's COLLECTIVE (first on its stream) starts at its launch delay 1.
// Last arrival 1.75 → both end 2.0.
TEST(EngineLaunchDelay, CollectiveArrivesAfterItsDelay) {
  const ProgramSet set = parse_program_set(
      "world pp=2 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\n"
      "r0 dp COLLECTIVE ALL_REDUCE g[r0..r1]\n"
      "r1 compute F mb0 s1\n"
      "r1 compute RECORD f\n"
      "r1 dp WAIT f\n"
      "r1 dp COLLECTIVE ALL_REDUCE g[r0..r1]\n");
  DelayCost cost;
  cost.launch = {{{0, 0}, 1.0}, {{1, 3}, 0.5}};
  cost.arrival = {{{1, 3}, 0.25}};
  const EngineResult r = run_engine(set, {PlatformKind::STRICT_TIMED, &cost});
  ASSERT_TRUE(r.completed) << format_deadlock(set, r);
  EXPECT_DOUBLE_EQ(r.timing[0][0].start_ms, 1.0);
  EXPECT_DOUBLE_EQ(r.timing[1][3].start_ms, 1.5);
  EXPECT_DOUBLE_EQ(r.timing[0][0].end_ms, 2.0);
  EXPECT_DOUBLE_EQ(r.timing[1][3].end_ms, 2.0);
}

// A negative or non-finite launch delay would run time backwards: a located error.
TEST(EngineLaunchDelay, NegativeDelayIsALocatedError) {
  DelayCost cost;
  cost.launch = {{{1, 3}, -0.5}};
  try {
    run_engine(two_stage_one_mb(), {PlatformKind::STRICT_TIMED, &cost});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("launch_delay_ms of r1 #3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ppstream
