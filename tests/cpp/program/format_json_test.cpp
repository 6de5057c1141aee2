// JSON form: the exact schema of format.h, round trips, and errors that name the JSON path.
#include <gtest/gtest.h>

#include "ppstream/program/format.h"

namespace ppstream {
namespace {

const char* kText =
    "world pp=2 vpp=2 shard=2 replicate=1 expanded=0 mode=fsdp policy=async\n"
    "r0 fsdp UNSHARD s2\n"
    "r0 compute F mb0 s0\n"
    "r0 compute RECORD fwd_out[mb0,s0]\n"
    "r0 p2p WAIT fwd_out[mb0,s0]\n"
    "r0 p2p BATCH{SEND_F mb0 s0 ->r1; RECV_B mb0 s2 <-r1}\n"
    "r0 compute B mb0 s2\n"
    "r0 reduce REDUCE_GRAD s2\n"
    "r0 fsdp RESHARD s2\n"
    "r0 compute OPT_STEP\n"
    "r1 p2p BATCH{RECV_F mb0 s1 <-r0; SEND_B mb0 s3 ->r0}\n";

TEST(FormatJson, PrintsTheDocumentedSchema) {
  ProgramSet set = parse_program_set(
      "world pp=2 vpp=1 shard=1 replicate=4 expanded=0 mode=hsdp policy=inline\n"
      "r1 compute B mb3 s1\n"
      "r1 p2p BATCH{SEND_B mb3 s1 ->r0}\n"
      "r1 compute RECORD e1\n"
      "r1 compute OPT_STEP\n");
  EXPECT_EQ(to_json(set),
            R"({"format":"ppstream.programs/1","world":{"pp":2,"vpp":1,"shard":1,"replicate":4,"expanded":false},)"
            R"("mode":"hsdp","policy":"inline","programs":[{"rank":1,"pp_rank":1,"instrs":[)"
            R"({"stream":"compute","op":"B","mb":3,"stage":1,"text":"r1 compute B mb3 s1"},)"
            R"({"stream":"p2p","op":"BATCH","p2p":[{"kind":"SEND_B","mb":3,"stage":1,"peer":0}],)"
            R"("text":"r1 p2p BATCH{SEND_B mb3 s1 ->r0}"},)"
            R"({"stream":"compute","op":"RECORD","event":"e1","text":"r1 compute RECORD e1"},)"
            R"({"stream":"compute","op":"OPT_STEP","text":"r1 compute OPT_STEP"}]}]})");
}

TEST(FormatJson, EveryOpKindRoundTrips) {
  ProgramSet set = parse_program_set(kText);
  for (int indent : {-1, 2}) {
    std::string j = to_json(set, indent);
    ProgramSet back = parse_json(j, "set.json");
    EXPECT_EQ(back, set);
    EXPECT_EQ(to_text(back), kText);
  }
}

TEST(FormatJson, TextFieldIsOptionalOnInput) {
  ProgramSet set = parse_json(
      R"({"format":"ppstream.programs/1","world":{"pp":1,"vpp":1,"shard":1,"replicate":1,"expanded":true},)"
      R"("mode":"none","policy":"none","programs":[{"rank":0,"pp_rank":0,"instrs":[)"
      R"({"op":"F","stream":"compute","stage":0,"mb":4}]}]})");
  EXPECT_EQ(to_text(set),
            "world pp=1 vpp=1 shard=1 replicate=1 expanded=1 mode=none policy=none\n"
            "r0 compute F mb4 s0\n");
}

std::string json_error(const std::string& text) {
  try {
    parse_json(text, "bad.json");
  } catch (const ParseError& e) {
    return e.what();
  }
  return "(no error)";
}

// A valid document with one replaceable instruction at programs[1].instrs[1].
std::string doc_with(const std::string& instr, const std::string& world = R"({"pp":2,"vpp":1,"shard":1,"replicate":1,"expanded":false})",
                     const std::string& second_rank = R"("rank":1,"pp_rank":1)") {
  return R"({"format":"ppstream.programs/1","world":)" + world +
         R"(,"mode":"none","policy":"none","programs":[)"
         R"({"rank":0,"pp_rank":0,"instrs":[{"stream":"compute","op":"OPT_STEP"}]},{)" +
         second_rank + R"(,"instrs":[{"stream":"compute","op":"OPT_STEP"},)" + instr + "]}]}";
}

TEST(FormatJson, ValidDocumentHelperParses) {
  EXPECT_EQ(parse_json(doc_with(R"({"stream":"compute","op":"F","mb":1,"stage":1})")).programs.size(), 2u);
}

TEST(FormatJson, ErrorsNameThePath) {
  const std::string at = "bad.json: programs[1].instrs[1]";
  EXPECT_EQ(json_error(doc_with(R"({"stream":"compute","op":"FWD"})")),
            at + ".op: expected one of F, B, I, W, BATCH, RECORD, WAIT, UNSHARD, RESHARD, REDUCE_GRAD, OPT_STEP, COLLECTIVE, got \"FWD\"");
  EXPECT_EQ(json_error(doc_with(R"({"stream":"compute","op":"F","stage":1})")),
            at + ".mb: expected a value (required key), got nothing");
  EXPECT_EQ(json_error(doc_with(R"({"stream":"compute","op":"F","mb":-1,"stage":1})")),
            at + ".mb: expected an integer >= 0, got -1");
  EXPECT_EQ(json_error(doc_with(R"({"stream":"compute","op":"F","mb":1.5,"stage":1})")),
            at + ".mb: expected an integer >= 0, got 1.5");
  EXPECT_EQ(json_error(doc_with(R"({"stream":"compute","op":"F","mb":3000000000,"stage":1})")),
            at + ".mb: expected an integer >= 0, got 3000000000");
  EXPECT_EQ(json_error(doc_with(R"({"stream":"compute","op":"OPT_STEP","mb":1})")),
            at + ".mb: expected no such key here (allowed: stream, op, text), got 1");
  EXPECT_EQ(json_error(doc_with(R"({"stream":"Compute","op":"OPT_STEP"})")),
            at + ".stream: expected a stream name [a-z][a-z0-9_.]*, got \"Compute\"");
  EXPECT_EQ(json_error(doc_with(R"({"stream":"compute","op":"WAIT","event":"a b"})")),
            at + ".event: expected an event name (printable, no spaces or ;{}), got \"a b\"");
  EXPECT_EQ(json_error(doc_with(R"({"stream":"p2p","op":"BATCH","p2p":[]})")),
            at + ".p2p: expected a non-empty array of P2P ops, got []");
  EXPECT_EQ(json_error(doc_with(R"({"stream":"p2p","op":"BATCH","p2p":[{"kind":"SEND_F","mb":0,"stage":1,"peer":0},{"kind":"SEND","mb":0,"stage":1,"peer":0}]})")),
            at + ".p2p[1].kind: expected one of SEND_F, RECV_F, SEND_B, RECV_B, got \"SEND\"");
  EXPECT_EQ(json_error(doc_with(R"({"stream":"p2p","op":"BATCH","p2p":[{"kind":"SEND_F","mb":0,"stage":1}]})")),
            at + ".p2p[0].peer: expected a value (required key), got nothing");
  EXPECT_EQ(json_error(doc_with(R"({"stream":"compute","op":"F","mb":1,"stage":1,"text":"r1 compute F mb2 s1"})")),
            at + ".text: expected \"r1 compute F mb1 s1\" (the instruction's canonical text), got \"r1 compute F mb2 s1\"");
  EXPECT_EQ(json_error(doc_with("7")), at + ": expected an object, got 7");
}

TEST(FormatJson, DocumentLevelErrors) {
  const std::string ok_instr = R"({"stream":"compute","op":"OPT_STEP"})";
  EXPECT_EQ(json_error(doc_with(ok_instr, R"({"pp":2,"vpp":1,"shard":1,"replicate":1,"expanded":0})")),
            "bad.json: world.expanded: expected true or false, got 0");
  EXPECT_EQ(json_error(doc_with(ok_instr, R"({"pp":0,"vpp":1,"shard":1,"replicate":1,"expanded":false})")),
            "bad.json: world.pp: expected an integer >= 1, got 0");
  EXPECT_EQ(json_error(doc_with(ok_instr, R"({"pp":2,"vpp":1,"shard":1,"replicate":1,"expanded":false})",
                                R"("rank":1,"pp_rank":0)")),
            "bad.json: programs[1].pp_rank: expected 1 (derived from rank and world), got 0");
  EXPECT_EQ(json_error(doc_with(ok_instr, R"({"pp":2,"vpp":1,"shard":1,"replicate":1,"expanded":false})",
                                R"("rank":0,"pp_rank":0)")),
            "bad.json: programs[1].rank: expected a rank above r0 (programs sorted by rank, one per rank), got 0");
  EXPECT_EQ(json_error(R"({"format":"ppstream.programs/2"})"),
            "bad.json: format: expected \"ppstream.programs/1\", got \"ppstream.programs/2\"");
  EXPECT_EQ(json_error(R"({"format":"ppstream.programs/1","extra":1})"),
            "bad.json: extra: expected no such key here (allowed: format, world, mode, policy, programs), got 1");
  EXPECT_EQ(json_error("[]"), "bad.json: (root): expected an object, got []");
  std::string mismatch = doc_with(ok_instr);
  mismatch.replace(mismatch.find(R"("policy":"none")"), 15, R"("policy":"async")");
  EXPECT_EQ(json_error(mismatch), "bad.json: policy: expected \"none\" with mode none, got \"async\"");
  std::string malformed = json_error(R"({"format": )");
  // 11 characters, then the end of input: nlohmann reports it at byte 12 (1-based).
  EXPECT_EQ(malformed.rfind("bad.json: byte 12: malformed JSON at '", 0), 0u) << malformed;
  EXPECT_EQ(malformed.find("json.exception"), std::string::npos) << malformed;
}

TEST(FormatJson, NumberOverflowIsALocatedError) {
  // Was nlohmann's bare "[json.exception.out_of_range.406] number overflow parsing '1e999'".
  const std::string ok_instr = R"({"stream":"compute","op":"OPT_STEP"})";
  std::string doc = doc_with(ok_instr);
  const size_t at = doc.find(R"("pp":)") + 5;
  doc.replace(at, 1, "1e999");
  EXPECT_EQ(json_error(doc), "bad.json: byte " + std::to_string(at + 5) +
                                 ": malformed JSON at '1e999': number out of range (finite double expected)");
  EXPECT_EQ(json_error(R"({"format":-1e999})"),
            "bad.json: byte 16: malformed JSON at '-1e999': number out of range (finite double expected)");
  // A large integer is not an overflow of the parser: it is reported as an out-of-range value.
  EXPECT_EQ(json_error(doc_with(ok_instr, R"({"pp":99999999999999999999,"vpp":1,"shard":1,"replicate":1,"expanded":false})")),
            "bad.json: world.pp: expected an integer >= 1, got 1e+20");
}

}  // namespace
}  // namespace ppstream
