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
#pragma once

#include <stdexcept>
#include <string>

#include "ppstream/program/ir.h"

namespace ppstream {

class ParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;  // "<origin>:<line>: <what was expected>"
};

std::string to_text(const P2POp& op);                  // "SEND_B mb15 s7 ->r2"
std::string to_text(const Instr& i);                   // "compute B mb15 s7" (no rank)
std::string to_text(Rank r, const Instr& i);           // "r3 compute B mb15 s7"
std::string to_text(const ProgramSet& set);            // world line + every rank's lines
std::string to_text(const ProgramSet& set, Rank only); // world line + that rank's lines
ProgramSet parse_program_set(const std::string& text, const std::string& origin = "<text>");
// Parses one instruction line "r3 compute B mb15 s7"; throws ParseError.
std::pair<Rank, Instr> parse_instr_line(const std::string& line, const std::string& origin = "<text>", int line_no = 1);

// JSON: {"format":"ppstream.programs/1","world":{...},"mode":"hsdp","policy":"async",
//        "programs":[{"rank":3,"pp_rank":3,"instrs":[{"stream":"compute","op":"B","mb":15,
//        "stage":7,"text":"r3 compute B mb15 s7"}, {"op":"BATCH","p2p":[{"kind":"SEND_B",
//        "mb":15,"stage":7,"peer":2}],...}, {"op":"RECORD","event":"..."}]}]}
std::string to_json(const ProgramSet& set, int indent = -1);
ProgramSet parse_json(const std::string& json_text, const std::string& origin = "<json>");

}  // namespace ppstream
