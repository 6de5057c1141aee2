// COLLECTIVE instructions of explicit, named groups (ir.h Collective): text and JSON round-trip,
// the engine's per-member ends (last arrival + the member's own collective_ms, derived by hand
// below), deadlocks across groups, and the verifier's structure / collective-order /
// communicator-order rules on them.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "ppstream/engine/engine.h"
#include "ppstream/program/format.h"
#include "ppstream/verify/verify.h"

namespace ppstream {
namespace {

constexpr const char* kHeader = "world pp=4 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\n";

// Per-rank arrival delays and collective times; F and OPT_STEP 1 ms.
class RankCost : public CostModel {
 public:
  std::map<int, double> arrival, coll;
  double compute_ms(const Program&, const Instr& i) const override { return i.op == OpKind::F || i.op == OpKind::OPT_STEP ? 1.0 : 0.0; }
  double collective_ms(const Program& p, const Instr&) const override { return at(coll, p.rank.v); }
  double arrival_delay_ms(const Program& p, const Instr&) const override { return at(arrival, p.rank.v); }

 private:
  static double at(const std::map<int, double>& m, int r) {
    auto it = m.find(r);
    return it == m.end() ? 0.0 : it->second;
  }
};

std::string all(const std::vector<Violation>& v) {
  std::string out;
  for (const auto& x : v) out += x.to_string() + "\n";
  return out;
}

bool has_rule(const std::vector<Violation>& v, const std::string& rule) {
  for (const auto& x : v)
    if (x.rule == rule) return true;
  return false;
}

TEST(NamedCollective, TextAndJsonRoundTrip) {
  const std::string text = std::string(kHeader) +
                           "r0 dp COLLECTIVE ALL_REDUCE clip[r0..r3]\n"
                           "r0 dp COLLECTIVE ALL_REDUCE emb.0[r0..r3:3]\n"
                           "r1 dp COLLECTIVE ALL_GATHER solo[r1]\n"
                           "r1 dp COLLECTIVE REDUCE_SCATTER clip[r0..r3]\n";
  const ProgramSet set = parse_program_set(text);
  EXPECT_EQ(to_text(set), text);
  EXPECT_EQ(parse_json(to_json(set)), set);
  const Collective& emb = set.programs[0].collective(set.programs[0].instrs[1].coll);
  EXPECT_EQ(emb.group, "emb.0");
  EXPECT_EQ(emb.first, Rank{0});
  EXPECT_EQ(emb.stride, 3);
  EXPECT_EQ(emb.count, 2);
  EXPECT_EQ(emb.index_of(Rank{3}), 1);
  EXPECT_FALSE(emb.index_of(Rank{1}));
  // Programs compare collectives by value, not by table position.
  ProgramSet other = set;
  std::swap(other.programs[0].collectives[0], other.programs[0].collectives[1]);
  EXPECT_FALSE(other == set);
  std::swap(other.programs[0].instrs[0].coll, other.programs[0].instrs[1].coll);
  EXPECT_EQ(other, set);
}

TEST(NamedCollective, BadGroupTextIsALocatedError) {
  for (const char* bad : {"r0 dp COLLECTIVE ALL_REDUCE clip\n", "r0 dp COLLECTIVE ALL_REDUCE clip[r3..r1]\n",
                          "r0 dp COLLECTIVE ALL_REDUCE clip[r0..r3:2]\n", "r0 dp COLLECTIVE BROADCAST clip[r0]\n",
                          "r0 dp COLLECTIVE ALL_REDUCE Clip[r0]\n"}) {
    try {
      parse_program_set(std::string(kHeader) + bad);
      ADD_FAILURE() << "parsed: " << bad;
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find("<text>:2:"), std::string::npos) << e.what();
    }
  }
}

// Members r0, r1, r2 of `clip` arrive at 1, 3, 0 (arrival delays; the instruction starts at 0)
// and take 0.5, 2, 1 ms of their own: last arrival 3, so they end at 3.5, 5 and 4. r3 is not a
// member: its OPT_STEP runs [0, 1] alone.
TEST(NamedCollective, EachMemberEndsAtTheLastArrivalPlusItsOwnTime) {
  const ProgramSet set = parse_program_set(std::string(kHeader) +
                                           "r0 dp COLLECTIVE ALL_REDUCE clip[r0..r2]\n"
                                           "r1 dp COLLECTIVE ALL_REDUCE clip[r0..r2]\n"
                                           "r2 dp COLLECTIVE ALL_REDUCE clip[r0..r2]\n"
                                           "r3 compute OPT_STEP\n");
  RankCost cost;
  cost.arrival = {{0, 1.0}, {1, 3.0}, {2, 0.0}};
  cost.coll = {{0, 0.5}, {1, 2.0}, {2, 1.0}};
  for (PlatformKind pk : {PlatformKind::ASCEND_MINDSPORE, PlatformKind::CPU_SERIAL}) {
    const EngineResult r = run_engine(set, {pk, &cost});
    ASSERT_TRUE(r.completed) << to_string(pk);
    EXPECT_DOUBLE_EQ(r.timing[0][0].end_ms, 3.5) << to_string(pk);
    EXPECT_DOUBLE_EQ(r.timing[1][0].end_ms, 5.0) << to_string(pk);
    EXPECT_DOUBLE_EQ(r.timing[2][0].end_ms, 4.0) << to_string(pk);
    EXPECT_DOUBLE_EQ(r.timing[3][0].end_ms, 1.0) << to_string(pk);
    EXPECT_DOUBLE_EQ(r.makespan_ms, 5.0) << to_string(pk);
  }
  EXPECT_TRUE(verify(set, {{PlatformKind::STRICT, PlatformKind::ASCEND_MINDSPORE, PlatformKind::CPU_SERIAL}, ""}).empty());
}

// The embedding all-reduce between the first and the last stage, after each one's F: both F
// end at 1, so both start the collective at 1; r3 arrives 2 ms late (at 3), so it completes at
// 3 + 0.5 on r0 and 3 + 0.25 on r3.
TEST(NamedCollective, EmbeddingPairAcrossStagesAfterCompute) {
  const ProgramSet set = parse_program_set(std::string(kHeader) +
                                           "r0 compute F mb0 s0\n"
                                           "r0 compute COLLECTIVE ALL_REDUCE emb[r0..r3:3]\n"
                                           "r3 compute F mb0 s3\n"
                                           "r3 compute COLLECTIVE ALL_REDUCE emb[r0..r3:3]\n");
  RankCost cost;
  cost.arrival = {{3, 2.0}};
  cost.coll = {{0, 0.5}, {3, 0.25}};
  const EngineResult r = run_engine(set, {PlatformKind::ASCEND_MINDSPORE, &cost});
  ASSERT_TRUE(r.completed);
  EXPECT_DOUBLE_EQ(r.timing[0][1].start_ms, 1.0);
  EXPECT_DOUBLE_EQ(r.timing[0][1].end_ms, 3.5);
  EXPECT_DOUBLE_EQ(r.timing[1][1].end_ms, 3.25);
}

// r0 issues clip before emb, r3 emb before clip, both on one stream: each waits for the other
// (a cycle the engine reports and the verifier names as a deadlock).
TEST(NamedCollective, CrossGroupOrderDeadlocks) {
  const ProgramSet set = parse_program_set(std::string(kHeader) +
                                           "r0 dp COLLECTIVE ALL_REDUCE clip[r0..r3:3]\n"
                                           "r0 dp COLLECTIVE ALL_REDUCE emb[r0..r3:3]\n"
                                           "r3 dp COLLECTIVE ALL_REDUCE emb[r0..r3:3]\n"
                                           "r3 dp COLLECTIVE ALL_REDUCE clip[r0..r3:3]\n");
  const EngineResult r = run_engine(set);
  EXPECT_FALSE(r.completed);
  const std::string report = format_deadlock(set, r);
  EXPECT_NE(report.find("group clip"), std::string::npos) << report;
  const auto v = verify(set);
  EXPECT_TRUE(has_rule(v, "deadlock")) << all(v);
}

TEST(NamedCollective, VerifierComparesOpTypesAndCountsPerGroup) {
  const auto v = verify(parse_program_set(std::string(kHeader) +
                                          "r0 dp COLLECTIVE ALL_REDUCE g[r0..r1]\n"
                                          "r0 dp COLLECTIVE ALL_REDUCE g[r0..r1]\n"
                                          "r1 dp COLLECTIVE ALL_GATHER g[r0..r1]\n"));
  ASSERT_TRUE(has_rule(v, "collective-order")) << all(v);
  const std::string text = all(v);
  EXPECT_NE(text.find("ALL_GATHER g[r0..r1] is the 1st collective of group g on r1"), std::string::npos) << text;
  const auto short_member = verify(parse_program_set(std::string(kHeader) +
                                                     "r0 dp COLLECTIVE ALL_REDUCE g[r0..r1]\n"
                                                     "r0 dp COLLECTIVE ALL_REDUCE g[r0..r1]\n"
                                                     "r1 dp COLLECTIVE ALL_REDUCE g[r0..r1]\n"));
  EXPECT_NE(all(short_member).find("issues only 1 in that group"), std::string::npos) << all(short_member);
}

TEST(NamedCollective, StructureErrorsNameTheGroup) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {Case{"r0 dp COLLECTIVE ALL_REDUCE g[r0..r7]\n", "names r4, which is not in the set"},
                        Case{"r0 dp COLLECTIVE ALL_REDUCE g[r1..r2]\n", "not a member"},
                        Case{"r0 dp COLLECTIVE ALL_REDUCE g[r0..r1]\nr1 dp COLLECTIVE ALL_REDUCE g[r1..r2]\n",
                             "has members g[r1..r2] here but g[r0..r1]"}}) {
    const std::string text = std::string(kHeader) + c.text + "r1 compute F mb0 s1\nr2 compute F mb0 s2\nr3 compute F mb0 s3\n";
    const auto v = verify(parse_program_set(text));
    ASSERT_TRUE(has_rule(v, "structure")) << all(v);
    EXPECT_NE(all(v).find(c.message), std::string::npos) << all(v);
    EXPECT_THROW(run_engine(parse_program_set(text)), std::invalid_argument);
  }
}

TEST(NamedCollective, OneGroupFromTwoStreamsNeedsAnEvent) {
  const std::string body =
      "r0 a COLLECTIVE ALL_REDUCE g[r0..r1]\n"
      "r0 b COLLECTIVE ALL_REDUCE g[r0..r1]\n"
      "r1 a COLLECTIVE ALL_REDUCE g[r0..r1]\n"
      "r1 a COLLECTIVE ALL_REDUCE g[r0..r1]\n";
  const auto v = verify(parse_program_set(std::string(kHeader) + body));
  EXPECT_TRUE(has_rule(v, "communicator-order")) << all(v);
  const std::string ordered =
      "r0 a COLLECTIVE ALL_REDUCE g[r0..r1]\n"
      "r0 a RECORD g_done\n"
      "r0 b WAIT g_done\n"
      "r0 b COLLECTIVE ALL_REDUCE g[r0..r1]\n"
      "r1 a COLLECTIVE ALL_REDUCE g[r0..r1]\n"
      "r1 a COLLECTIVE ALL_REDUCE g[r0..r1]\n";
  const auto ok = verify(parse_program_set(std::string(kHeader) + ordered));
  EXPECT_TRUE(ok.empty()) << all(ok);
}

// strict-timed keeps strict's P2P rule (per channel only) with the cost model's times. r0 sends
// F on stream a and receives B on stream b; r1 posts its RECV_F after a 1 ms OPT_STEP and its
// SEND_B at once. strict-timed: r0's RECV_B matches at 0 and ends at 0, its SEND_F at 1.
// ascend-mindspore queues r0's ops with r1 in program order: RECV_B waits for SEND_F (ends 1).
TEST(NamedCollective, StrictTimedOrdersP2POnlyPerChannel) {
  const ProgramSet set = parse_program_set(std::string(kHeader) +
                                           "r0 a BATCH{SEND_F mb0 s0 ->r1}\n"
                                           "r0 b BATCH{RECV_B mb0 s0 <-r1}\n"
                                           "r1 a OPT_STEP\n"
                                           "r1 a BATCH{RECV_F mb0 s1 <-r0}\n"
                                           "r1 b BATCH{SEND_B mb0 s1 ->r0}\n");
  RankCost cost;
  const EngineResult strict_timed = run_engine(set, {PlatformKind::STRICT_TIMED, &cost});
  ASSERT_TRUE(strict_timed.completed);
  EXPECT_DOUBLE_EQ(strict_timed.timing[0][0].end_ms, 1.0);
  EXPECT_DOUBLE_EQ(strict_timed.timing[0][1].end_ms, 0.0);
  const EngineResult ascend = run_engine(set, {PlatformKind::ASCEND_MINDSPORE, &cost});
  ASSERT_TRUE(ascend.completed);
  EXPECT_DOUBLE_EQ(ascend.timing[0][1].end_ms, 1.0);
  EXPECT_EQ(parse_platform("strict-timed"), PlatformKind::STRICT_TIMED);
}

}  // namespace
}  // namespace ppstream
