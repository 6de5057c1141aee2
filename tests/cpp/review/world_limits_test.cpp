// Review regressions: world sizes whose products overflow int32 (dp(), rank ids) or hold more
// virtual stages than the config allows must be refused by the parsers and the verifier, not
// divide by zero (SIGFPE in pp_rank_of) or loop over 2^31 stages.
#include <gtest/gtest.h>

#include <string>

#include "ppstream/program/format.h"
#include "ppstream/verify/verify.h"

namespace ppstream {
namespace {

std::string text_error(const std::string& text) {
  try {
    parse_program_set(text, "p.txt");
  } catch (const ParseError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ReviewWorldLimits, WorldSizeErrorNamesTheOverflow) {
  EXPECT_EQ(world_size_error(World{2, 1, 65536, 65536, true}),
            "world pp=2 shard=65536 replicate=65536: more than 2147483647 ranks; rank ids must fit in int32");
  EXPECT_EQ(world_size_error(World{2147483647, 2147483647, 1, 1, false}),
            "world pp=2147483647 vpp=2147483647: 4611686014132420609 virtual stages; at most 65536");
  EXPECT_EQ(world_size_error(World{0, 1, 1, 1, false}),
            "world pp=0 vpp=1 shard=1 replicate=1: every size must be >= 1");
  // The seed's world, 4 x 32 x 128 = 16,384 ranks, and the largest allowed sizes are fine.
  EXPECT_EQ(world_size_error(World{4, 2, 32, 128, true}), std::nullopt);
  EXPECT_EQ(world_size_error(World{1, 65536, 1, 2147483647, true}), std::nullopt);
  EXPECT_NE(world_size_error(World{2, 1, 1, 2147483647, true}), std::nullopt);
}

TEST(ReviewWorldLimits, TextHeaderWithOverflowingDpIsAParseError) {
  // Was SIGFPE: pp_rank_of divided by dp() = 65536 * 65536 wrapped to 0.
  EXPECT_EQ(text_error("world pp=2 vpp=1 shard=65536 replicate=65536 expanded=1 mode=hsdp policy=async\n"
                       "r0 compute F mb0 s0\n"),
            "p.txt:1: world pp=2 shard=65536 replicate=65536: more than 2147483647 ranks; rank ids must fit in int32");
  EXPECT_EQ(text_error("world pp=70000 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\n"),
            "p.txt:1: world pp=70000 vpp=1: 70000 virtual stages; at most 65536");
}

TEST(ReviewWorldLimits, JsonWorldWithOverflowingDpIsAParseError) {
  const std::string j = R"({"format":"ppstream.programs/1","world":{"pp":2,"vpp":1,"shard":65536,"replicate":65536,
    "expanded":true},"mode":"hsdp","policy":"async","programs":[{"rank":0,"pp_rank":0,"instrs":[]}]})";
  try {
    parse_json(j, "p.json");
    FAIL() << "no error";
  } catch (const ParseError& e) {
    EXPECT_STREQ(e.what(),
                 "p.json: world: world pp=2 shard=65536 replicate=65536: more than 2147483647 ranks; rank ids must "
                 "fit in int32");
  }
}

TEST(ReviewWorldLimits, VerifierReportsHugeWorldAsStructureAndStops) {
  // Built in code (no parser): was a loop over 2^31 chunks per rank in reduce-once.
  ProgramSet set;
  set.world = World{2147483647, 2147483647, 1, 1, false};
  Program p;
  p.rank = Rank{0};
  Instr f;
  f.stream = streams::kCompute;
  p.instrs.push_back(f);
  set.programs.push_back(p);
  const auto v = verify(set, {});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, "structure");
  EXPECT_EQ(v[0].message, "world pp=2147483647 vpp=2147483647: 4611686014132420609 virtual stages; at most 65536");
}

TEST(ReviewWorldLimits, RankBeyondThePipelineSaysSo) {
  ProgramSet set = parse_program_set(
      "world pp=2 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\nr5 compute F mb0 s0\n", "p.txt");
  const auto v = verify(set, {});
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].to_string(),
            "verify: r5: [structure] r5 is outside the world: its PP rank would be 5, but pp=2 (dp=1 expanded=0)");
}

}  // namespace
}  // namespace ppstream
