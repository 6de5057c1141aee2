// StreamId and a Program's stream table (program/streams.h): the well-known ids are the same
// constants on every program, other names are appended on first use, equality of programs
// compares streams by name, and an id outside its table is a verifier error, not a crash.
#include <gtest/gtest.h>

#include <type_traits>
#include <unordered_set>

#include "ppstream/program/format.h"
#include "ppstream/verify/verify.h"

namespace ppstream {
namespace {

static_assert(!std::is_convertible_v<int, StreamId> && !std::is_convertible_v<const char*, StreamId> &&
              !std::is_convertible_v<std::string, StreamId>);
static_assert(streams::name_of(streams::kCompute) == "compute" && streams::name_of(streams::kReduce) == "reduce" &&
              streams::name_of(streams::kFsdp) == "fsdp" && streams::name_of(streams::kP2P) == "p2p");

TEST(StreamId, WellKnownNamesSeedEveryTableInTheirFixedOrder) {
  Program p;
  EXPECT_EQ(p.intern_stream("compute"), streams::kCompute);
  EXPECT_EQ(p.intern_stream("reduce"), streams::kReduce);
  EXPECT_EQ(p.intern_stream("fsdp"), streams::kFsdp);
  EXPECT_EQ(p.intern_stream("p2p"), streams::kP2P);
  EXPECT_EQ(p.stream_names.size(), streams::kWellKnown.size());
  EXPECT_EQ(p.stream_name(streams::kReduce), "reduce");
}

TEST(StreamId, OtherNamesAreAppendedOnFirstUseAndFoundAfter) {
  Program p;
  EXPECT_FALSE(p.find_stream("p2p.2"));
  const StreamId e2 = p.intern_stream("p2p.2");
  const StreamId mine = p.intern_stream("mine");
  EXPECT_EQ(e2, StreamId{4});
  EXPECT_EQ(mine, StreamId{5});
  EXPECT_EQ(p.intern_stream("p2p.2"), e2);
  EXPECT_EQ(p.find_stream("mine"), mine);
  EXPECT_EQ(p.stream_name(e2), "p2p.2");
  EXPECT_THROW(p.stream_name(StreamId{6}), std::out_of_range);
  const std::unordered_set<StreamId> ids{e2, mine, streams::kCompute, e2};
  EXPECT_EQ(ids.size(), 3u);
}

TEST(StreamId, ProgramsCompareStreamsByNameNotTablePosition) {
  Program a, b;
  Instr x;
  x.op = OpKind::OPT_STEP;
  x.stream = a.intern_stream("x");
  a.instrs.push_back(x);
  b.intern_stream("unused");  // b's "x" gets another id
  x.stream = b.intern_stream("x");
  b.instrs.push_back(x);
  EXPECT_NE(a.instrs[0].stream, b.instrs[0].stream);
  EXPECT_EQ(a, b);
  b.instrs[0].stream = b.intern_stream("y");
  EXPECT_NE(a, b);
  b.instrs[0].stream = b.intern_stream("x");
  b.instrs[0].op = OpKind::F;  // same stream, another op
  EXPECT_NE(a, b);
}

TEST(StreamId, TextAndJsonRoundTripHandWrittenStreamNames) {
  const std::string text =
      "world pp=1 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\n"
      "r0 zeta F mb0 s0\nr0 p2p.7 RECORD e\nr0 compute WAIT e\nr0 zeta OPT_STEP\n";
  const ProgramSet set = parse_program_set(text);
  const Program& p = set.programs.at(0);
  EXPECT_EQ(p.stream_name(p.instrs[0].stream), "zeta");
  EXPECT_EQ(p.instrs[2].stream, streams::kCompute);
  EXPECT_EQ(p.instrs[0].stream, p.instrs[3].stream);
  EXPECT_EQ(to_text(set), text);
  EXPECT_EQ(parse_json(to_json(set)), set);
  EXPECT_EQ(to_text(parse_json(to_json(set))), text);
}

TEST(StreamId, AnIdOutsideItsProgramsTableIsAStructureError) {
  ProgramSet set;
  Program p;
  Instr f;
  f.op = OpKind::OPT_STEP;
  f.stream = StreamId{42};
  p.instrs.push_back(f);
  set.programs.push_back(p);
  const auto v = verify(set, {});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, "structure");
  EXPECT_NE(v[0].message.find("stream id 42 is not in r0's stream table (4 names)"), std::string::npos) << v[0].message;
}

}  // namespace
}  // namespace ppstream
