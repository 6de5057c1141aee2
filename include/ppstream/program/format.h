// Canonical text and JSON forms of programs. Text round-trips exactly: parse(print(p)) == p.
//
//   # comments and blank lines are ignored
//   world pp=4 vpp=2 shard=8 replicate=32 expanded=0 mode=hsdp policy=async
//   r3 compute B mb15 s7
//   r3 compute RECORD compute_ready[s7]
//   r3 p2p.2 BATCH{SEND_B mb15 s7 ->r2; RECV_B mb12 s3 <-r0}
//   r3 reduce REDUCE_GRAD s7
//
// Lines of one rank keep their relative order (= program order); ranks may interleave.
//
// Grammar (one instruction per line, tokens separated by spaces or tabs):
//   header  := "world pp=<n> vpp=<n> shard=<n> replicate=<n> expanded=0|1
//               mode=none|fsdp|hsdp policy=none|inline|async"   (keys in this order, n >= 1;
//               exactly once, before any instruction; policy=none iff mode=none)
//   line    := "r<rank> <stream> " op
//   op      := "F mb<m> s<s>" | "B mb<m> s<s>" [bucket] | "I mb<m> s<s>" | "W mb<m> s<s>" [bucket]
//            | "BATCH{" p2p ("; " p2p)* "}"
//            | "RECORD <event>" | "WAIT <event>" | "UNSHARD s<s>" | "RESHARD s<s>"
//            | "REDUCE_GRAD s<s>" [bucket] | "OPT_STEP" | "COLLECTIVE " coll " " group
//   coll    := "ALL_REDUCE" | "ALL_GATHER" | "REDUCE_SCATTER"
//   group   := <name> "[r<first>" ( "..r<last>" ( ":<stride>" )? )? "]"   (name as a stream name;
//              members first, first+stride, …, last; stride written only when not 1, last only
//              when there are two or more members: clip[r0..r63], emb.0[r0..r12:12], solo[r5])
//   bucket  := "bucket<j>/<k>"  (0 <= j < k, k >= 2; absent = the whole stage, ir.h Bucket;
//               JSON: "bucket": [j, k])
//   p2p     := "SEND_F|SEND_B mb<m> s<s> ->r<q>" | "RECV_F|RECV_B mb<m> s<s> <-r<q>"
//   stream  := [a-z][a-z0-9_.]*        event := printable ASCII without spaces and ;{}
// Numbers are non-negative decimal int32. A line whose first non-blank character is `#` is a
// comment. The parsers check syntax only (plus pp_rank in JSON); meaning is the verifier's job.
// Program::pp_rank is derived: pp_rank_of(rank, world). Programs are sorted by rank.
// parse(print(p)) == p holds for sets whose programs are sorted, non-empty (a rank without
// instructions has no line, so text drops it; JSON keeps it), carry the derived pp_rank, use
// valid names and leave the fields their kinds do not use at their defaults.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "ppstream/program/ir.h"

namespace ppstream {

class ParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;  // "<origin>:<line>: <what was expected>"
};

// The printers print only the fields an instruction's kind uses and never throw (but for
// std::out_of_range on a stream or event id outside the program's tables); names are
// checked by the parsers (a stream or event name outside the grammar does not parse back).
// An Instr's stream and event are ids in its program's tables (ir.h), so printing takes the
// program.
std::string to_text(const P2POp& op);                       // "SEND_B mb15 s7 ->r2"
std::string op_text(const Program& p, const Instr& i);      // "B mb15 s7" (no rank, no stream)
std::string to_text(const Program& p, const Instr& i);      // "compute B mb15 s7" (no rank)
std::string to_line(const Program& p, const Instr& i);      // "r3 compute B mb15 s7"
std::string to_text(const ProgramSet& set);            // world line + every rank's lines
std::string to_text(const ProgramSet& set, Rank only); // world line + that rank's lines;
                                                       // std::invalid_argument if rank absent
std::string to_text_header(const ProgramSet& set);     // "world pp=4 … policy=async" (no newline)
// Throws ParseError "<origin>:<line>: expected <what>, got '<token>'".
ProgramSet parse_program_set(const std::string& text, const std::string& origin = "<text>");
// Parses one instruction line "r3 compute B mb15 s7" into a program of that rank holding just
// this instruction (its stream in that program's table; pp_rank left 0: no world is known);
// throws ParseError.
Program parse_instr_line(const std::string& line, const std::string& origin = "<text>", int line_no = 1);

bool is_valid_stream_name(std::string_view name);  // [a-z][a-z0-9_.]*
bool is_valid_event_name(std::string_view name);   // non-empty printable ASCII, no space or ;{}

// JSON: {"format":"ppstream.programs/1","world":{...},"mode":"hsdp","policy":"async",
//        "programs":[{"rank":3,"pp_rank":3,"instrs":[{"stream":"compute","op":"B","mb":15,
//        "stage":7,"text":"r3 compute B mb15 s7"}, {"op":"BATCH","p2p":[{"kind":"SEND_B",
//        "mb":15,"stage":7,"peer":2}],...}, {"op":"RECORD","event":"..."},
//        {"op":"COLLECTIVE","coll":"ALL_REDUCE","group":"clip","first":0,"stride":1,"count":64}]}]}
// `world.expanded` is a JSON bool; "text" is optional on input but must equal the canonical
// line when present; unknown keys and keys the op does not use are rejected. parse_json throws
// ParseError "<origin>: <path>: expected <what>, got <json>", e.g. path programs[2].instrs[17].op,
// or "<origin>: byte <n>: …" for malformed JSON.
std::string to_json(const ProgramSet& set, int indent = -1);
ProgramSet parse_json(const std::string& json_text, const std::string& origin = "<json>");
// Reads a program file: JSON when the name ends in ".json", canonical text otherwise. Throws
// ParseError "<path>: cannot read: <why>" for a missing file, a directory or a read error, and
// the parsers' errors (with the path as origin) for its content.
ProgramSet read_program_file(const std::string& path);

}  // namespace ppstream
