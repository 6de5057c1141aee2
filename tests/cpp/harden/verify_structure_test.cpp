// Hardening regressions for the verifier on structurally invalid sets: static rules must not do
// rank or stage arithmetic (e.g. `pp_rank + c * pp` in reduce-once) for a rank outside the world,
// and skip exactly the programs that fail `structure` (the others are still checked).
#include <gtest/gtest.h>

#include "ppstream/program/format.h"
#include "ppstream/verify/verify.h"

namespace ppstream {
namespace {

TEST(HardenVerify, RankOutsideTheWorldReportsStructureOnly) {
  // Was signed overflow (UBSan) in reduce-once: 2147483647 + 1 * 4.
  const ProgramSet set = parse_program_set(
      "world pp=4 vpp=2 shard=1 replicate=2 expanded=0 mode=hsdp policy=inline\n"
      "r2147483647 compute F mb0 s3\n"
      "r2147483647 dp REDUCE_GRAD s3\n",
      "p.txt");
  const auto v = verify(set);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(),
            "verify: r2147483647: [structure] r2147483647 is outside the world: its PP rank would be 2147483647, but "
            "pp=4 (dp=2 expanded=0)");
}

TEST(HardenVerify, StaticRulesSkipOnlyTheProgramsThatFailStructure) {
  // r0 is valid and breaks the event rule; r2147483647 is outside the world (and would break
  // the event rule too): only r0's static violation and r2147483647's structure error are kept.
  const ProgramSet set = parse_program_set(
      "world pp=4 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\n"
      "r0 compute WAIT never_recorded\n"
      "r0 compute F mb0 s0\n"
      "r2147483647 compute WAIT also_never_recorded\n"
      "r2147483647 compute F mb0 s3\n",
      "p.txt");
  const auto v = verify(set);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].rule, "structure");
  EXPECT_EQ(v[0].rank.v, 2147483647);
  EXPECT_EQ(v[1].to_string(), "verify: r0 #0 compute: [event] WAIT never_recorded has no RECORD before it on r0 (never recorded)");
}

TEST(HardenVerify, StaticRulesSkipChannelsIntoAProgramThatFailsStructure) {
  // r0 posts two sends on its channel to r1, r1 one receive: p2p-fifo reports r0's second send
  // while r1 is valid, and nothing once r1's pp_rank is wrong (r1 skipped, channels into it too).
  ProgramSet set = parse_program_set(
      "world pp=2 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\n"
      "r0 p2p BATCH{SEND_F mb0 s0 ->r1}\n"
      "r0 p2p BATCH{SEND_F mb1 s0 ->r1}\n"
      "r1 p2p BATCH{RECV_F mb0 s1 <-r0}\n",
      "p.txt");
  bool fifo = false;
  for (const Violation& x : verify(set)) fifo |= x.rule == "p2p-fifo" && x.rank.v == 0;
  EXPECT_TRUE(fifo);
  set.programs[1].pp_rank = 7;
  const auto v = verify(set);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].to_string(), "verify: r1: [structure] r1 has pp_rank 7 but the world (pp=2 dp=1 expanded=0) gives 1");
  for (const Violation& x : v) {
    EXPECT_NE(x.rule, "p2p-fifo") << x.to_string();
    EXPECT_TRUE(x.rule == "structure" || x.rank.v == 0) << x.to_string();  // r0 is still checked
  }
}

}  // namespace
}  // namespace ppstream
