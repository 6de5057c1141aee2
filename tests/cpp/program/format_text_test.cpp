// Canonical text form: exact round trips for every op kind, rank interleaving, and errors
// that name origin:line and the offending token.
#include <gtest/gtest.h>

#include "ppstream/program/format.h"

namespace ppstream {
namespace {

Instr compute(OpKind op, int32_t mb, int32_t s) {
  Instr i;
  i.op = op;
  i.stream = streams::kCompute;
  i.mb = Microbatch{mb};
  i.stage = Stage{s};
  return i;
}

// Stream and event names are interned in `p`, the program the instruction belongs to (or one whose tables
// list the same names in the same order).
Instr on_stage(Program& p, OpKind op, const char* stream, int32_t s) {
  Instr i;
  i.op = op;
  i.stream = p.intern_stream(stream);
  i.stage = Stage{s};
  return i;
}

Instr event(Program& p, OpKind op, const char* stream, const char* ev) {
  Instr i;
  i.op = op;
  i.stream = p.intern_stream(stream);
  i.event = p.intern_event(ev);
  return i;
}

// Every op kind and every P2P kind, on a PP4 × VPP2 HSDP replica (hand-built, not compiled).
const char* kEveryKind =
    "world pp=4 vpp=2 shard=8 replicate=32 expanded=0 mode=hsdp policy=async\n"
    "r3 fsdp UNSHARD s7\n"
    "r3 p2p.2 BATCH{RECV_F mb15 s7 <-r2}\n"
    "r3 compute F mb15 s7\n"
    "r3 compute B mb15 s7\n"
    "r3 compute RECORD compute_ready[s7]\n"
    "r3 p2p.2 BATCH{SEND_B mb15 s7 ->r2; RECV_B mb12 s3 <-r0; SEND_F mb2 s3 ->r0}\n"
    "r3 reduce WAIT compute_ready[s7]\n"
    "r3 reduce REDUCE_GRAD s7\n"
    "r3 fsdp RESHARD s7\n"
    "r3 compute OPT_STEP\n";

TEST(FormatText, EveryOpKindParsesToTheExpectedFieldsAndPrintsBackExactly) {
  ProgramSet set = parse_program_set(kEveryKind, "every.txt");
  EXPECT_EQ(set.world, (World{4, 2, 8, 32, false}));
  EXPECT_EQ(set.mode, DPMode::HSDP);
  EXPECT_EQ(set.policy, ReducePolicy::ASYNC);
  ASSERT_EQ(set.programs.size(), 1u);
  const Program& p = set.programs[0];
  EXPECT_EQ(p.rank, Rank{3});
  EXPECT_EQ(p.pp_rank, 3);
  ASSERT_EQ(p.instrs.size(), 10u);
  Program t = p;  // the expected instructions' stream ids come from a table like p's
  EXPECT_EQ(p.instrs[0], on_stage(t, OpKind::UNSHARD, "fsdp", 7));
  Instr recv;
  recv.op = OpKind::BATCH;
  recv.stream = t.intern_stream("p2p.2");
  recv.p2p = {P2POp{P2PKind::RECV_F, Microbatch{15}, Stage{7}, Rank{2}}};
  EXPECT_EQ(p.instrs[1], recv);
  EXPECT_EQ(p.instrs[2], compute(OpKind::F, 15, 7));
  EXPECT_EQ(p.instrs[3], compute(OpKind::B, 15, 7));
  EXPECT_EQ(p.instrs[4], event(t, OpKind::RECORD, "compute", "compute_ready[s7]"));
  Instr batch;
  batch.op = OpKind::BATCH;
  batch.stream = t.intern_stream("p2p.2");
  batch.p2p = {P2POp{P2PKind::SEND_B, Microbatch{15}, Stage{7}, Rank{2}},
               P2POp{P2PKind::RECV_B, Microbatch{12}, Stage{3}, Rank{0}},
               P2POp{P2PKind::SEND_F, Microbatch{2}, Stage{3}, Rank{0}}};
  EXPECT_EQ(p.instrs[5], batch);
  EXPECT_EQ(p.instrs[6], event(t, OpKind::WAIT, "reduce", "compute_ready[s7]"));
  EXPECT_EQ(p.instrs[7], on_stage(t, OpKind::REDUCE_GRAD, "reduce", 7));
  EXPECT_EQ(p.instrs[8], on_stage(t, OpKind::RESHARD, "fsdp", 7));
  Instr opt;
  opt.op = OpKind::OPT_STEP;
  opt.stream = streams::kCompute;
  EXPECT_EQ(p.instrs[9], opt);

  EXPECT_EQ(to_text(set), kEveryKind);
}

TEST(FormatText, SingleInstructionPrinters) {
  EXPECT_EQ(to_text(P2POp{P2PKind::SEND_B, Microbatch{15}, Stage{7}, Rank{2}}), "SEND_B mb15 s7 ->r2");
  EXPECT_EQ(to_text(P2POp{P2PKind::RECV_F, Microbatch{0}, Stage{1}, Rank{4096}}), "RECV_F mb0 s1 <-r4096");
  Program p;
  p.rank = Rank{3};
  EXPECT_EQ(op_text(p, compute(OpKind::B, 15, 7)), "B mb15 s7");
  EXPECT_EQ(op_text(p, event(p, OpKind::WAIT, "p2p.1", "e[0]")), "WAIT e[0]");
  EXPECT_EQ(to_text(p, compute(OpKind::B, 15, 7)), "compute B mb15 s7");
  EXPECT_EQ(to_line(p, compute(OpKind::B, 15, 7)), "r3 compute B mb15 s7");
  EXPECT_EQ(to_line(p, on_stage(p, OpKind::REDUCE_GRAD, "p2p.1", 4)), "r3 p2p.1 REDUCE_GRAD s4");
}

TEST(FormatText, BuiltSetRoundTripsThroughText) {
  ProgramSet set;
  set.world = World{2, 1, 2, 2, true};  // dp = 4: ranks 0-3 are PP rank 0, 4-7 PP rank 1
  set.mode = DPMode::HSDP;
  set.policy = ReducePolicy::INLINE;
  for (int32_t r : {1, 6}) {
    Program p;
    p.rank = Rank{r};
    p.pp_rank = r / 4;
    int32_t s = p.pp_rank;
    int32_t peer = r < 4 ? r + 4 : r - 4;
    p.instrs.push_back(on_stage(p, OpKind::UNSHARD, "fsdp", s));
    p.instrs.push_back(compute(OpKind::F, 0, s));
    Instr b;
    b.op = OpKind::BATCH;
    b.stream = streams::kP2P;
    b.p2p = {P2POp{s == 0 ? P2PKind::SEND_F : P2PKind::RECV_B, Microbatch{0}, Stage{s}, Rank{peer}}};
    p.instrs.push_back(b);
    p.instrs.push_back(compute(OpKind::B, 0, s));
    p.instrs.push_back(on_stage(p, OpKind::REDUCE_GRAD, "compute", s));
    p.instrs.push_back(on_stage(p, OpKind::RESHARD, "fsdp", s));
    p.instrs.push_back(event(p, OpKind::RECORD, "compute", "done"));
    p.instrs.push_back(event(p, OpKind::WAIT, "fsdp", "done"));
    Instr opt;
    opt.op = OpKind::OPT_STEP;
    opt.stream = streams::kCompute;
    p.instrs.push_back(opt);
    set.programs.push_back(p);
  }
  std::string text = to_text(set);
  EXPECT_EQ(parse_program_set(text), set);
  EXPECT_EQ(to_text(parse_program_set(text)), text);
  // Spot-check the printed form against hand-written lines.
  EXPECT_NE(text.find("world pp=2 vpp=1 shard=2 replicate=2 expanded=1 mode=hsdp policy=inline\n"), std::string::npos);
  EXPECT_NE(text.find("r1 p2p BATCH{SEND_F mb0 s0 ->r5}\n"), std::string::npos);
  EXPECT_NE(text.find("r6 p2p BATCH{RECV_B mb0 s1 <-r2}\n"), std::string::npos);
}

TEST(FormatText, InterleavedRanksAreGroupedAndSortedKeepingProgramOrder) {
  const char* text =
      "# a comment\n"
      "world pp=2 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\n"
      "\n"
      "r1 compute F mb0 s1\n"
      "   # indented comment\n"
      "r0 compute F mb0 s0\r\n"
      "r1\tcompute   B mb0 s1  \n"
      "r0 compute F mb1 s0\n"
      "r0 compute B mb0 s0";  // no final newline
  ProgramSet set = parse_program_set(text);
  ASSERT_EQ(set.programs.size(), 2u);
  EXPECT_EQ(set.programs[0].rank, Rank{0});
  EXPECT_EQ(set.programs[1].rank, Rank{1});
  EXPECT_EQ(set.programs[0].instrs,
            (std::vector<Instr>{compute(OpKind::F, 0, 0), compute(OpKind::F, 1, 0), compute(OpKind::B, 0, 0)}));
  EXPECT_EQ(set.programs[1].instrs, (std::vector<Instr>{compute(OpKind::F, 0, 1), compute(OpKind::B, 0, 1)}));
  EXPECT_EQ(to_text(set),
            "world pp=2 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\n"
            "r0 compute F mb0 s0\n"
            "r0 compute F mb1 s0\n"
            "r0 compute B mb0 s0\n"
            "r1 compute F mb0 s1\n"
            "r1 compute B mb0 s1\n");
  EXPECT_EQ(to_text(set, Rank{1}),
            "world pp=2 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\n"
            "r1 compute F mb0 s1\n"
            "r1 compute B mb0 s1\n");
  EXPECT_THROW(to_text(set, Rank{2}), std::invalid_argument);
}

TEST(FormatText, ExpandedSetDerivesPpRankFromRank) {
  // The seed's layout: dp = shard 8 × replicate 512 = 4096, so r4096 is PP rank 1.
  ProgramSet set = parse_program_set(
      "world pp=4 vpp=2 shard=8 replicate=512 expanded=1 mode=hsdp policy=inline\n"
      "r12288 compute OPT_STEP\n"
      "r0 compute OPT_STEP\n"
      "r4096 compute OPT_STEP\n"
      "r8191 compute OPT_STEP\n");
  ASSERT_EQ(set.programs.size(), 4u);
  EXPECT_EQ(set.programs[0].pp_rank, 0);
  EXPECT_EQ(set.programs[1].pp_rank, 1);   // r4096
  EXPECT_EQ(set.programs[2].pp_rank, 1);   // r8191
  EXPECT_EQ(set.programs[3].pp_rank, 3);   // r12288
}

TEST(FormatText, HeaderOnlySetIsEmpty) {
  ProgramSet set = parse_program_set("world pp=1 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\n");
  EXPECT_TRUE(set.programs.empty());
  EXPECT_EQ(to_text(set), "world pp=1 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\n");
}

TEST(FormatText, RankWithoutInstructionsHasNoLines) {
  ProgramSet set;
  set.programs.push_back(Program{Rank{0}, 0, {}});
  EXPECT_EQ(to_text(set), "world pp=1 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\n");
  EXPECT_TRUE(parse_program_set(to_text(set)).programs.empty());
  EXPECT_EQ(parse_json(to_json(set)), set);  // JSON keeps the empty program
}

std::string parse_error(const std::string& text) {
  try {
    parse_program_set(text, "bad.txt");
  } catch (const ParseError& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string kHeader = "world pp=2 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\n";

TEST(FormatText, HeaderErrorsNameLineAndToken) {
  EXPECT_EQ(parse_error(""), "bad.txt:1: expected a 'world pp=… policy=…' line, got end of input");
  EXPECT_EQ(parse_error("# only\n\n"), "bad.txt:3: expected a 'world pp=… policy=…' line, got end of input");
  EXPECT_EQ(parse_error("r0 compute F mb0 s0\n"),
            "bad.txt:1: expected the 'world pp=… policy=…' line before any instruction, got 'r0'");
  EXPECT_EQ(parse_error(kHeader + kHeader), "bad.txt:2: expected one 'world' line per program set, got 'world (a second one)'");
  EXPECT_EQ(parse_error("world vpp=1 pp=2 shard=1 replicate=1 expanded=0 mode=none policy=none\n"),
            "bad.txt:1: expected pp=<integer >= 1>, got 'vpp=1'");
  EXPECT_EQ(parse_error("world pp=0 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none\n"),
            "bad.txt:1: expected pp=<integer >= 1>, got 'pp=0'");
  EXPECT_EQ(parse_error("world pp=2 vpp=1 shard=1 replicate=1 expanded=yes mode=none policy=none\n"),
            "bad.txt:1: expected expanded=0|1, got 'expanded=yes'");
  EXPECT_EQ(parse_error("world pp=2 vpp=1 shard=1 replicate=1 expanded=0 mode=ddp policy=none\n"),
            "bad.txt:1: expected mode=none|fsdp|hsdp, got 'mode=ddp'");
  EXPECT_EQ(parse_error("world pp=2 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=async\n"),
            "bad.txt:1: expected policy=none with mode=none, got 'policy=async'");
  EXPECT_EQ(parse_error("world pp=2 vpp=1 shard=2 replicate=1 expanded=0 mode=fsdp policy=none\n"),
            "bad.txt:1: expected policy=inline|async with a DP mode, got 'policy=none'");
  EXPECT_EQ(parse_error("world pp=2 vpp=1 shard=1 replicate=1 expanded=0 mode=none\n"),
            "bad.txt:1: expected policy=none|inline|async, got end of line");
  EXPECT_EQ(parse_error("world pp=2 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none extra\n"),
            "bad.txt:1: expected end of line, got 'extra'");
}

TEST(FormatText, InstructionErrorsNameLineAndToken) {
  struct Case {
    std::string line;
    std::string message;  // after "bad.txt:3: "
  };
  const std::vector<Case> cases = {
      {"x0 compute F mb0 s0", "expected r<rank> (e.g. r3) or 'world', got 'x0'"},
      {"r-1 compute F mb0 s0", "expected r<rank> (e.g. r3) or 'world', got 'r-1'"},
      {"r0 Compute F mb0 s0", "expected a stream name [a-z][a-z0-9_.]*, got 'Compute'"},
      {"r0", "expected a stream name [a-z][a-z0-9_.]*, got end of line"},
      {"r0 compute FWD mb0 s0",
       "expected an op (F, B, I, W, BATCH, RECORD, WAIT, UNSHARD, RESHARD, REDUCE_GRAD, OPT_STEP, COLLECTIVE), got 'FWD'"},
      {"r0 compute F mb s0", "expected mb<microbatch> (e.g. mb3), got 'mb'"},
      {"r0 compute F mb99999999999 s0", "expected mb<microbatch> (e.g. mb3), got 'mb99999999999'"},
      {"r0 compute B mb1 stage1", "expected s<stage> (e.g. s7), got 'stage1'"},
      {"r0 compute B mb1", "expected s<stage> (e.g. s7), got end of line"},
      {"r0 compute OPT_STEP now", "expected end of line, got 'now'"},
      {"r0 compute F mb0 s0 s1", "expected end of line, got 's1'"},
      {"r0 p2p BATCH SEND_F mb0 s0 ->r1", "expected '{' after BATCH, got 'SEND_F'"},
      {"r0 p2p BATCH{}", "expected a P2P op (SEND_F, RECV_F, SEND_B, RECV_B), got '}'"},
      {"r0 p2p BATCH{SEND_X mb0 s0 ->r1}",
       "expected a P2P op (SEND_F, RECV_F, SEND_B, RECV_B), got 'SEND_X'"},
      {"r0 p2p BATCH{SEND_F mb0 s0 <-r1}", "expected '->r<peer>' after SEND_F, got '<-r1'"},
      {"r0 p2p BATCH{RECV_B mb0 s0 ->r1}", "expected '<-r<peer>' after RECV_B, got '->r1'"},
      {"r0 p2p BATCH{SEND_F mb0 s0 -> r1}", "expected '->r<peer>' after SEND_F, got '->'"},
      {"r0 p2p BATCH{SEND_F mb0 s0 ->r1", "expected ';' or '}' after a P2P op, got end of line"},
      {"r0 p2p BATCH{SEND_F mb0 s0 ->r1, RECV_B mb0 s0 <-r1}",
       "expected '->r<peer>' after SEND_F, got '->r1,'"},
      {"r0 p2p BATCH{SEND_F mb0 s0 ->r1;}",
       "expected a P2P op (SEND_F, RECV_F, SEND_B, RECV_B), got '}'"},
      {"r0 p2p BATCH{SEND_F mb0 s0 ->r1} x", "expected end of line, got 'x'"},
      {"r0 compute RECORD", "expected an event name (printable, no spaces or ;{}), got end of line"},
      {"r0 compute WAIT a{b}", "expected an event name (printable, no spaces or ;{}), got 'a{b}'"},
      {"r0 compute WAIT e1 e2", "expected end of line, got 'e2'"},
      {"r0 fsdp UNSHARD mb0", "expected s<stage> (e.g. s7), got 'mb0'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line);
    EXPECT_EQ(parse_error(kHeader + "r1 compute F mb0 s1\n" + c.line + "\nr0 compute OPT_STEP\n"),
              "bad.txt:3: " + c.message);
  }
}

TEST(FormatText, ParseInstrLineUsesOriginAndLineNumber) {
  const Program line = parse_instr_line("r7 p2p.3 BATCH{SEND_F mb1 s3 ->r0;RECV_B mb0 s3 <-r0}");
  EXPECT_EQ(line.rank, Rank{7});
  ASSERT_EQ(line.instrs.size(), 1u);
  const Instr& i = line.instrs[0];
  ASSERT_EQ(i.p2p.size(), 2u);
  EXPECT_EQ(line.stream_name(i.stream), "p2p.3");
  EXPECT_EQ(i.p2p[1], (P2POp{P2PKind::RECV_B, Microbatch{0}, Stage{3}, Rank{0}}));
  // Canonical spacing on print.
  EXPECT_EQ(to_line(line, i), "r7 p2p.3 BATCH{SEND_F mb1 s3 ->r0; RECV_B mb0 s3 <-r0}");
  try {
    parse_instr_line("r7 compute F mb1", "trace.json", 42);
    FAIL() << "no error";
  } catch (const ParseError& e) {
    EXPECT_STREQ(e.what(), "trace.json:42: expected s<stage> (e.g. s7), got end of line");
  }
}

TEST(FormatText, NameRules) {
  EXPECT_TRUE(is_valid_stream_name("p2p.2"));
  EXPECT_TRUE(is_valid_stream_name("hsdp_ag"));
  EXPECT_FALSE(is_valid_stream_name("2p2p"));
  EXPECT_FALSE(is_valid_stream_name(""));
  EXPECT_FALSE(is_valid_stream_name("p2p-2"));
  EXPECT_TRUE(is_valid_event_name("fwd_out[mb3,s1]"));
  EXPECT_FALSE(is_valid_event_name(""));
  EXPECT_FALSE(is_valid_event_name("a b"));
  EXPECT_FALSE(is_valid_event_name("a;b"));
}

}  // namespace
}  // namespace ppstream
