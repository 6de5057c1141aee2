// StreamId / EventId and a Program's name tables (program/streams.h, ir.h): the well-known
// stream ids are the same constants on every program, other names are appended on first use,
// equality of programs compares names, and an id outside its table is a verifier error, not a
// crash.
#include <gtest/gtest.h>

#include <type_traits>
#include <unordered_set>

#include "ppstream/program/format.h"
#include "ppstream/program/name_index.h"
#include "ppstream/verify/verify.h"

namespace ppstream {
namespace {

static_assert(!std::is_convertible_v<int, StreamId> && !std::is_convertible_v<const char*, StreamId> &&
              !std::is_convertible_v<std::string, StreamId>);
static_assert(!std::is_convertible_v<int, EventId> && !std::is_convertible_v<std::string, EventId>);
static_assert(streams::name_of(streams::kCompute) == "compute" && streams::name_of(streams::kReduce) == "reduce" &&
              streams::name_of(streams::kFsdp) == "fsdp" && streams::name_of(streams::kP2P) == "p2p");

// The message of the one violation the verifier finds in a one-rank set holding just `in`, when
// that is a structure violation (else a line saying what it found instead).
std::string only_structure_error(const Instr& in) {
  ProgramSet set;
  set.programs.emplace_back().instrs.push_back(in);
  const auto v = verify(set, {});
  if (v.size() != 1 || v[0].rule != "structure") return "(not one structure violation: " + std::to_string(v.size()) + ")";
  return v[0].message;
}

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
  Instr f;
  f.op = OpKind::OPT_STEP;
  f.stream = StreamId{42};
  const std::string e = only_structure_error(f);
  EXPECT_NE(e.find("stream id 42 is not in r0's stream table (4 names)"), std::string::npos) << e;
}

TEST(EventId, EventsAreInternedPerProgramAndComparedByName) {
  Program a, b;
  EXPECT_TRUE(a.event_names.empty());
  const EventId e0 = a.intern_event("compute_ready[s7]");
  EXPECT_EQ(e0, EventId{0});
  EXPECT_EQ(a.intern_event("compute_ready[s7]"), e0);
  EXPECT_EQ(a.event_name(e0), "compute_ready[s7]");
  EXPECT_THROW(a.event_name(EventId{1}), std::out_of_range);
  Instr w;
  w.op = OpKind::WAIT;
  w.event = e0;
  a.instrs.push_back(w);
  b.intern_event("other");
  w.event = b.intern_event("compute_ready[s7]");  // id 1 in b
  b.instrs.push_back(w);
  EXPECT_EQ(a, b);
  b.instrs[0].event = b.intern_event("other");
  EXPECT_NE(a, b);
}

TEST(EventId, NameIndexAgreesWithTheTableItIndexes) {
  Program p;
  p.intern_event("x");  // already in the table before the index
  NameIndex<EventId> index;
  EXPECT_EQ(index.intern(p.event_names, "x"), EventId{0});
  EXPECT_EQ(index.intern(p.event_names, "y"), EventId{1});
  EXPECT_EQ(index.intern(p.event_names, "y"), EventId{1});
  EXPECT_EQ(p.find_event("y"), EventId{1});
  NameIndex<StreamId> streams;
  EXPECT_EQ(streams.intern(p.stream_names, "reduce"), streams::kReduce);
  EXPECT_EQ(streams.intern(p.stream_names, "p2p.0"), StreamId{4});
  EXPECT_EQ(p.intern_stream("p2p.0"), StreamId{4});
}

TEST(EventId, AnIdOutsideItsProgramsTableIsAStructureError) {
  Instr w;
  w.op = OpKind::WAIT;
  w.event = EventId{3};
  const std::string e = only_structure_error(w);
  EXPECT_NE(e.find("event id 3 is not in r0's event table (0 names)"), std::string::npos) << e;
}

}  // namespace
}  // namespace ppstream
