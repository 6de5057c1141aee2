// Verifier tests: correct programs yield no violation; one hand-written broken program per
// rule is caught by exactly that rule, with the message naming rank, index, stream and text.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "../engine/program_builder.h"
#include "../engine/synthetic_1f1b.h"
#include "ppstream/verify/verify.h"

namespace ppstream {
namespace {

using testing::recv_b;
using testing::recv_f;
using testing::send_b;
using testing::send_f;
using testing::SetBuilder;

World world(int pp, int vpp = 1, int shard = 1, int replicate = 1, bool expanded = false) {
  World w;
  w.pp = pp;
  w.vpp = vpp;
  w.shard = shard;
  w.replicate = replicate;
  w.expanded = expanded;
  return w;
}

std::set<std::string> rules(const std::vector<Violation>& v) {
  std::set<std::string> out;
  for (const auto& x : v) out.insert(x.rule);
  return out;
}

std::string dump(const std::vector<Violation>& v) {
  std::string out;
  for (const auto& x : v) out += x.to_string() + "\n";
  return out;
}

const VerifyOptions kBoth{{PlatformKind::STRICT, PlatformKind::CPU_SERIAL}, ""};

// One microbatch through two stages (mode none), each buffer ordered by RECORD/WAIT.
// Rank 1 of the two-stage sets: receive, forward, backward, send the input grad.
void two_stage_r1(SetBuilder& b) {
  b.r(1)
      .batch({recv_f(0, 1, 0)})
      .record("recv_F[mb0,s1]", "p2p")
      .wait("recv_F[mb0,s1]")
      .F(0, 1)
      .B(0, 1)
      .record("bwd_out[mb0,s1]")
      .wait("bwd_out[mb0,s1]", "p2p")
      .batch({send_b(0, 1, 0)});
}

SetBuilder two_stage(bool wait_fwd_out = true, bool swap_r0_batches = false) {
  SetBuilder b(world(2));
  b.r(0).F(0, 0).record("fwd_out[mb0,s0]");
  if (wait_fwd_out) b.wait("fwd_out[mb0,s0]", "p2p");
  if (swap_r0_batches)
    b.batch({recv_b(0, 0, 1)}).batch({send_f(0, 0, 1)});
  else
    b.batch({send_f(0, 0, 1)}).batch({recv_b(0, 0, 1)});
  b.record("recv_B[mb0,s0]", "p2p").wait("recv_B[mb0,s0]").B(0, 0);
  two_stage_r1(b);
  return b;
}

// One rank, two local stages (pp=1, vpp=2), FSDP with the inline placement; `skip` drops one
// instruction kind/stage to break a counting rule, `swap_unshard` reverses the gathers.
enum class Skip { NONE, REDUCE_S0, RESHARD_S1 };
void fsdp_rank(SetBuilder& b, int rank, Skip skip = Skip::NONE, bool swap_unshard = false) {
  b.r(rank);
  if (swap_unshard)
    b.unshard(1).unshard(0);
  else
    b.unshard(0).unshard(1);
  b.record("unsharded[s0,s1]", "fsdp").wait("unsharded[s0,s1]");
  b.F(0, 0).F(0, 1).B(0, 1).reduce(1, "compute");
  if (skip != Skip::RESHARD_S1) b.reshard(1);
  b.B(0, 0);
  if (skip != Skip::REDUCE_S0) b.reduce(0, "compute");
  b.reshard(0).opt();
}

ProgramSet synthetic(int pp, int mb, DPMode mode, ReducePolicy policy, World w = {}) {
  testing::Synthetic1F1B cfg;
  cfg.pp = pp;
  cfg.microbatches = mb;
  cfg.world = w;
  cfg.mode = mode;
  cfg.policy = policy;
  return testing::make_synthetic_1f1b(cfg);
}

int find_instr(const Program& p, OpKind k, int stage, const std::string& stream = "") {
  for (size_t i = 0; i < p.instrs.size(); ++i)
    if (p.instrs[i].op == k && p.instrs[i].stage.v == stage && (stream.empty() || p.stream_name(p.instrs[i].stream) == stream))
      return static_cast<int>(i);
  return -1;
}

TEST(VerifyCorrect, HandWrittenProgramsHaveNoViolation) {
  auto v = verify(two_stage().build(), kBoth);
  EXPECT_TRUE(v.empty()) << dump(v);
  SetBuilder b(world(1, 2, 2, 1, true), DPMode::FSDP, ReducePolicy::INLINE);
  fsdp_rank(b, 0);
  fsdp_rank(b, 1);
  v = verify(b.build(), kBoth);
  EXPECT_TRUE(v.empty()) << dump(v);
}

TEST(VerifyCorrect, Synthetic1F1BSetsHaveNoViolation) {
  const std::vector<ProgramSet> sets = {
      synthetic(4, 8, DPMode::NONE, ReducePolicy::NONE),
      synthetic(2, 4, DPMode::HSDP, ReducePolicy::ASYNC, world(1, 1, 2, 2, true)),
      synthetic(4, 6, DPMode::FSDP, ReducePolicy::INLINE, world(1, 1, 4, 1, false)),
      synthetic(4, 8, DPMode::HSDP, ReducePolicy::ASYNC, world(1, 1, 4, 2, false)),
      synthetic(3, 5, DPMode::HSDP, ReducePolicy::ASYNC, world(1, 1, 1, 2, true)),
  };
  for (const ProgramSet& s : sets) {
    const auto v = verify(s, kBoth);
    EXPECT_TRUE(v.empty()) << dump(v);
  }
}

TEST(VerifyDeadlock, TrueCycleUnderStrict) {
  // r0 posts its RECV_B batch before its SEND_F batch on one FIFO stream.
  const ProgramSet set = two_stage(true, true).build();
  const auto v = verify(set);
  EXPECT_EQ(rules(v), (std::set<std::string>{"deadlock"})) << dump(v);
  ASSERT_EQ(v.size(), 4u) << dump(v);  // r0 compute, r0 p2p, r1 compute, r1 p2p heads
  const auto it = std::find_if(v.begin(), v.end(), [](const Violation& x) { return x.rank == Rank{0} && x.stream == "p2p"; });
  ASSERT_NE(it, v.end());
  EXPECT_EQ(it->to_string(),
            "verify: r0 #3 p2p: [deadlock] under strict: BATCH{RECV_B mb0 s0 <-r1} never completes: waiting for peer r1 "
            "has not posted SEND_B mb0 s1 ->r0: r1 #7 p2p BATCH{SEND_B mb0 s1 ->r0}; waiting cycle r0 p2p #3 -> r1 "
            "p2p #0 -> r0 p2p #3");
}

TEST(VerifyDeadlock, OpOrderDeadlocksOnlyUnderCpuSerial) {
  ProgramSet set = synthetic(2, 2, DPMode::NONE, ReducePolicy::NONE);
  // r1's combined batch {RECV_F mb1; SEND_B mb0} reversed: r0 sends first, r1 sends first.
  for (Instr& in : set.programs[1].instrs)
    if (in.op == OpKind::BATCH && in.p2p.size() == 2) std::reverse(in.p2p.begin(), in.p2p.end());
  EXPECT_TRUE(verify(set).empty());
  const auto v = verify(set, kBoth);
  EXPECT_EQ(rules(v), (std::set<std::string>{"deadlock"})) << dump(v);
  for (const auto& x : v) EXPECT_NE(x.message.find("under cpu-serial"), std::string::npos) << x.to_string();
}

TEST(VerifyP2PFifo, ReceiverTakesMicrobatchesOutOfOrder) {
  SetBuilder b(world(2));
  b.r(0)
      .F(0, 0)
      .record("fwd_out[mb0,s0]")
      .F(1, 0)
      .record("fwd_out[mb1,s0]")
      .wait("fwd_out[mb0,s0]", "p2p")
      .batch({send_f(0, 0, 1)})
      .wait("fwd_out[mb1,s0]", "p2p")
      .batch({send_f(1, 0, 1)});
  b.r(1)
      .batch({recv_f(1, 1, 0)})
      .record("recv_F[mb1,s1]", "p2p")
      .batch({recv_f(0, 1, 0)})
      .record("recv_F[mb0,s1]", "p2p")
      .wait("recv_F[mb0,s1]")
      .F(0, 1)
      .wait("recv_F[mb1,s1]")
      .F(1, 1);
  const auto v = verify(b.build(), kBoth);
  EXPECT_EQ(rules(v), (std::set<std::string>{"p2p-fifo"})) << dump(v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(),
            "verify: r1 #0 p2p: [p2p-fifo] BATCH{RECV_F mb1 s1 <-r0}: its RECV_F mb1 s1 <-r0 is the 1st op on channel "
            "r0->r1 F and pairs with SEND_F mb0 s0 ->r1 in r0 #5 p2p BATCH{SEND_F mb0 s0 ->r1}; expected RECV_F mb0 s1 "
            "(1 more mismatched pairs on this channel)");
}

TEST(VerifyP2PFifo, ExtraSendIsNamedWithBothCounts) {
  ProgramSet set = two_stage().build();
  // A second SEND_F on r0 that r1 never receives (also a deadlock: the send never matches).
  Instr extra = set.programs[0].instrs[3];
  set.programs[0].instrs.push_back(extra);
  const auto v = verify(set);
  EXPECT_EQ(rules(v), (std::set<std::string>{"deadlock", "p2p-fifo"})) << dump(v);
  const auto it = std::find_if(v.begin(), v.end(), [](const Violation& x) { return x.rule == "p2p-fifo"; });
  EXPECT_EQ(it->message,
            "BATCH{SEND_F mb0 s0 ->r1}: its SEND_F mb0 s0 ->r1 is the 2nd SEND_F on channel r0->r1 F, but r1 posts "
            "only 1 RECV_F from r0");
}

TEST(VerifyP2PFifo, PeerMustHoldTheNeighbouringStage) {
  SetBuilder b(world(3));
  b.r(0).F(0, 0).record("f").wait("f", "p2p").batch({send_f(0, 0, 2)});
  b.r(1);
  b.r(2).batch({recv_f(0, 1, 0)}).record("r", "p2p").wait("r").F(0, 1);
  const auto v = verify(b.build());
  EXPECT_EQ(rules(v), (std::set<std::string>{"p2p-fifo"})) << dump(v);
  ASSERT_EQ(v.size(), 2u) << dump(v);
  EXPECT_EQ(v[0].message, "BATCH{SEND_F mb0 s0 ->r2}: SEND_F mb0 s0 ->r2 names r2, but stage s1 of this replica lives on r1");
  EXPECT_EQ(v[1].message, "BATCH{RECV_F mb0 s1 <-r0}: RECV_F mb0 s1 <-r0 names stage s1, which is not a stage of r2 (PP rank 2)");
}

TEST(VerifyBatchShape, OpsWithOnePeerSplitAcrossItsBatches) {
  SetBuilder b(world(2));
  b.r(0)
      .F(0, 0)
      .record("fwd_out[mb0,s0]")
      .wait("fwd_out[mb0,s0]", "p2p")
      .batch({send_f(0, 0, 1), recv_b(0, 0, 1)})
      .record("recv_B[mb0,s0]", "p2p")
      .wait("recv_B[mb0,s0]")
      .B(0, 0);
  b.r(1)
      .batch({recv_f(0, 1, 0)})
      .record("recv_F[mb0,s1]", "p2p")
      .wait("recv_F[mb0,s1]")
      .F(0, 1)
      .B(0, 1)
      .record("bwd_out[mb0,s1]")
      .wait("bwd_out[mb0,s1]", "p2p")
      .batch({send_b(0, 1, 0)});
  const auto v = verify(b.build(), kBoth);
  EXPECT_EQ(rules(v), (std::set<std::string>{"batch-shape"})) << dump(v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(),
            "verify: r0 #3 p2p: [batch-shape] BATCH{SEND_F mb0 s0 ->r1; RECV_B mb0 s0 <-r1}: its ops with r1 are "
            "mirrored by 2 batches there: r1 #0 p2p BATCH{RECV_F mb0 s1 <-r0} and r1 #7 p2p BATCH{SEND_B mb0 s1 ->r0}; "
            "they must sit in one batch");
}

TEST(VerifyCollectiveOrder, MembersGatherStagesInDifferentOrder) {
  SetBuilder b(world(1, 2, 2, 1, true), DPMode::FSDP, ReducePolicy::INLINE);
  fsdp_rank(b, 0);
  fsdp_rank(b, 1, Skip::NONE, /*swap_unshard=*/true);
  const auto v = verify(b.build(), kBoth);
  EXPECT_EQ(rules(v), (std::set<std::string>{"collective-order"})) << dump(v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(),
            "verify: r1 #0 fsdp: [collective-order] UNSHARD s1 is the 1st shard-group collective of r1, but the 1st "
            "of r0 is r0 #0 fsdp UNSHARD s0");
}

TEST(VerifyEvent, WaitBeforeItsRecord) {
  const ProgramSet set =
      SetBuilder(world(1)).r(0).wait("compute_ready[s0]", "reduce").F(0, 0).record("compute_ready[s0]").B(0, 0).build();
  VerifyOptions opts = kBoth;
  opts.after_pass = "place-reductions";
  const auto v = verify(set, opts);
  EXPECT_EQ(rules(v), (std::set<std::string>{"event"})) << dump(v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(),
            "verify: r0 #0 reduce: [event] WAIT compute_ready[s0] has no RECORD before it on r0 (recorded later: "
            "RECORD compute_ready[s0] (#2 compute)) (after pass place-reductions)");
}

TEST(VerifyEvent, EventRecordedTwice) {
  const ProgramSet set = SetBuilder(world(1)).r(0).F(0, 0).record("e").B(0, 0).record("e").wait("e", "x").build();
  const auto v = verify(set, kBoth);
  EXPECT_EQ(rules(v), (std::set<std::string>{"event"})) << dump(v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].index, 3);
  EXPECT_EQ(v[0].message, "RECORD e records e a second time on r0 (first: RECORD e (#1 compute))");
}

// torch/cutorch PR #222: an event recorded on two streams; the WAIT sees only the latest record.
SetBuilder re_recorded(bool forward_record_last) {
  SetBuilder b(world(2));
  b.r(0).F(0, 0);
  if (forward_record_last) b.record("fwd_out[mb0,s0]", "x").record("fwd_out[mb0,s0]");
  else b.record("fwd_out[mb0,s0]").record("fwd_out[mb0,s0]", "x");
  b.wait("fwd_out[mb0,s0]", "p2p").batch({send_f(0, 0, 1)}).batch({recv_b(0, 0, 1)});
  b.record("recv_B[mb0,s0]", "p2p").wait("recv_B[mb0,s0]").B(0, 0);
  two_stage_r1(b);
  return b;
}

TEST(VerifyEvent, ReRecordedEventOrdersByTheLatestRecord) {
  // Recorded after F on compute, then on x (nothing before it there): the send's WAIT follows
  // the record on x, so F mb0 s0 does not happen-before the send: the real race.
  auto v = verify(re_recorded(/*forward_record_last=*/false).build(), kBoth);
  EXPECT_EQ(rules(v), (std::set<std::string>{"event", "happens-before"})) << dump(v);
  bool race = false;
  for (const auto& x : v)
    race |= x.message == "activation: F mb0 s0 (#0 compute) does not happen-before BATCH{SEND_F mb0 s0 ->r1}: no "
                         "RECORD/WAIT chain leads from compute to p2p between them";
  EXPECT_TRUE(race) << dump(v);
  // Recorded on x first, then after F on compute: the WAIT follows the compute record, so the
  // send is ordered after F (no race); only the second record is reported.
  v = verify(re_recorded(/*forward_record_last=*/true).build(), kBoth);
  EXPECT_EQ(rules(v), (std::set<std::string>{"event"})) << dump(v);
}

TEST(VerifyHappensBefore, SendNotOrderedAfterTheForward) {
  const auto v = verify(two_stage(/*wait_fwd_out=*/false).build(), kBoth);
  EXPECT_EQ(rules(v), (std::set<std::string>{"happens-before"})) << dump(v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(),
            "verify: r0 #2 p2p: [happens-before] activation: F mb0 s0 (#0 compute) does not happen-before "
            "BATCH{SEND_F mb0 s0 ->r1}: no RECORD/WAIT chain leads from compute to p2p between them");
}

TEST(VerifyHappensBefore, BackwardWithoutItsForwardAndReshardTooEarly) {
  // Stash: B mb1 s0 has no F mb1 s0. Unsharded params: RESHARD s0 before B on compute.
  SetBuilder b(world(1, 1, 2, 1, false), DPMode::FSDP, ReducePolicy::INLINE);
  b.r(0).unshard(0).record("u", "fsdp").wait("u").F(0, 0).B(0, 0).B(1, 0).reduce(0, "compute").reshard(0).opt();
  auto v = verify(b.build());
  EXPECT_EQ(rules(v), (std::set<std::string>{"happens-before"})) << dump(v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].message, "stash: B mb1 s0 has no F mb1 s0 on r0");
  SetBuilder c(world(1, 1, 2, 1, false), DPMode::FSDP, ReducePolicy::INLINE);
  c.r(0).unshard(0).record("u", "fsdp").wait("u").F(0, 0).reshard(0, "fsdp").B(0, 0).reduce(0, "compute").opt();
  v = verify(c.build());
  EXPECT_EQ(rules(v), (std::set<std::string>{"happens-before", "drain"})) << dump(v);
  EXPECT_EQ(v[0].message,
            "unsharded params: F mb0 s0 (#3 compute) (and 2 more) does not happen-before RESHARD s0: no RECORD/WAIT "
            "chain leads from compute to fsdp between them");
}

TEST(VerifyReduceOnce, StageWithoutReduction) {
  SetBuilder b(world(1, 2, 2, 1, false), DPMode::FSDP, ReducePolicy::INLINE);
  fsdp_rank(b, 0, Skip::REDUCE_S0);
  const auto v = verify(b.build(), kBoth);
  EXPECT_EQ(rules(v), (std::set<std::string>{"reduce-once"})) << dump(v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(), "verify: r0: [reduce-once] stage s0 has no REDUCE_GRAD on r0 (mode fsdp)");
}

TEST(VerifyReduceOnce, ReductionWithModeNone) {
  const ProgramSet set = SetBuilder(world(1)).r(0).F(0, 0).B(0, 0).reduce(0, "compute").build();
  const auto v = verify(set);
  EXPECT_EQ(rules(v), (std::set<std::string>{"reduce-once"})) << dump(v);
  EXPECT_EQ(v[0].message, "REDUCE_GRAD s0: the set has mode none");
}

TEST(VerifyReshardOnce, StageNeverResharded) {
  SetBuilder b(world(1, 2, 2, 1, false), DPMode::FSDP, ReducePolicy::INLINE);
  fsdp_rank(b, 0, Skip::RESHARD_S1);
  const auto v = verify(b.build(), kBoth);
  EXPECT_EQ(rules(v), (std::set<std::string>{"reshard-once"})) << dump(v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(), "verify: r0: [reshard-once] stage s1 has no RESHARD on r0 (mode fsdp)");
}

TEST(VerifySendBeforeReduce, InlinePlacementUnderAsyncPolicy) {
  // The legacy order (REDUCE_GRAD on compute before the last SEND_B batch) labelled async.
  ProgramSet set = synthetic(2, 2, DPMode::HSDP, ReducePolicy::INLINE, world(1, 1, 1, 2, false));
  EXPECT_TRUE(verify(set, kBoth).empty());
  set.policy = ReducePolicy::ASYNC;
  const auto v = verify(set, kBoth);
  EXPECT_EQ(rules(v), (std::set<std::string>{"send-before-reduce"})) << dump(v);
  ASSERT_EQ(v.size(), 1u) << dump(v);
  EXPECT_EQ(v[0].rank, Rank{1});
  EXPECT_EQ(v[0].index, find_instr(set.programs[1], OpKind::REDUCE_GRAD, 1));
  EXPECT_EQ(v[0].stream, "compute");
  EXPECT_NE(v[0].message.find("REDUCE_GRAD s1 waits for a reduction on compute before BATCH{SEND_B mb1 s1 ->r0}"),
            std::string::npos)
      << v[0].message;
}

TEST(VerifySendBeforeReduce, WaitOnReduceDoneBeforeTheSend) {
  ProgramSet set = synthetic(2, 2, DPMode::HSDP, ReducePolicy::ASYNC, world(1, 1, 1, 2, false));
  auto& ins = set.programs[1].instrs;
  // Move r1's reduction (reduce stream) and its drain WAIT ahead of the SEND_B batch.
  const int red = find_instr(set.programs[1], OpKind::REDUCE_GRAD, 1);
  const Instr wait_ready = ins[red - 1], reduce = ins[red], record_done = ins[red + 1];
  Instr wait_done = ins[ins.size() - 2];
  ASSERT_EQ(set.programs[1].event_name(wait_done.event), "reduce_done[s1]");
  ins.erase(ins.end() - 2);
  ins.erase(ins.begin() + red - 1, ins.begin() + red + 2);
  int batch = -1;
  for (size_t i = 0; i < ins.size(); ++i)
    if (ins[i].op == OpKind::BATCH && ins[i].p2p[0].kind == P2PKind::SEND_B && ins[i].p2p[0].mb.v == 1) batch = static_cast<int>(i);
  ASSERT_GE(batch, 0);
  ins.insert(ins.begin() + batch - 1, {wait_ready, reduce, record_done, wait_done});
  const auto v = verify(set, kBoth);
  EXPECT_EQ(rules(v), (std::set<std::string>{"send-before-reduce"})) << dump(v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(ins[v[0].index].op, OpKind::WAIT);
  EXPECT_EQ(set.programs[1].event_name(ins[v[0].index].event), "reduce_done[s1]");
}

TEST(VerifyDrain, OptimizerDoesNotWaitForTheReduction) {
  ProgramSet set = synthetic(2, 2, DPMode::HSDP, ReducePolicy::ASYNC, world(1, 1, 1, 2, false));
  auto& ins = set.programs[0].instrs;
  ASSERT_EQ(set.programs[0].event_name(ins[ins.size() - 2].event), "reduce_done[s0]");
  ins.erase(ins.end() - 2);
  const auto v = verify(set, kBoth);
  EXPECT_EQ(rules(v), (std::set<std::string>{"drain"})) << dump(v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].index, static_cast<int>(ins.size()) - 1);
  EXPECT_NE(v[0].message.find("REDUCE_GRAD s0 (#"), std::string::npos);
  EXPECT_NE(v[0].message.find("does not happen-before OPT_STEP: no RECORD/WAIT chain leads from reduce to compute"),
            std::string::npos)
      << v[0].message;
}

TEST(VerifyDrain, MissingAndDoubleOptimizerStep) {
  SetBuilder b(world(1, 2, 2, 1, false), DPMode::FSDP, ReducePolicy::INLINE);
  fsdp_rank(b, 0);
  ProgramSet set = b.build();
  set.programs[0].instrs.push_back(set.programs[0].instrs.back());
  auto v = verify(set);
  EXPECT_EQ(rules(v), (std::set<std::string>{"drain"})) << dump(v);
  EXPECT_NE(v[0].message.find("is a second optimizer step on r0"), std::string::npos);
  set.programs[0].instrs.resize(set.programs[0].instrs.size() - 2);
  v = verify(set);
  EXPECT_EQ(rules(v), (std::set<std::string>{"drain"})) << dump(v);
  EXPECT_EQ(v[0].to_string(), "verify: r0: [drain] r0 has no OPT_STEP (mode fsdp needs exactly one)");
}

TEST(VerifyStructure, UnknownPeerIsReportedNotThrown) {
  const ProgramSet set = SetBuilder(world(2)).r(0).F(0, 0).record("f").wait("f", "p2p").batch({send_f(0, 0, 5)}).r(1).build();
  const auto v = verify(set);
  EXPECT_EQ(rules(v), (std::set<std::string>{"structure"})) << dump(v);
  EXPECT_EQ(v[0].to_string(), "verify: r0 #3 p2p: [structure] SEND_F mb0 s0 names peer r5, which is not in the set");
}

TEST(VerifyCorrect, CollectsViolationsOfSeveralRules) {
  // Breaking two rules at once reports both, never stopping at the first.
  SetBuilder b(world(1, 2, 2, 1, false), DPMode::FSDP, ReducePolicy::INLINE);
  fsdp_rank(b, 0, Skip::REDUCE_S0);
  ProgramSet set = b.build();
  set.programs[0].instrs.pop_back();  // and no OPT_STEP
  const auto v = verify(set);
  EXPECT_EQ(rules(v), (std::set<std::string>{"reduce-once", "drain"})) << dump(v);
}

}  // namespace
}  // namespace ppstream
