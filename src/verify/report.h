// Report: collects violations for the verifier's rules and renders instruction references in
// canonical text, so every rule words its messages the same way.
#pragma once

#include <string>
#include <vector>

#include "engine/ordinal.h"
#include "engine/topology.h"
#include "ppstream/program/format.h"
#include "ppstream/verify/verify.h"

namespace ppstream::verify_detail {

using engine::kNone;

class Report {
 public:
  Report(const ProgramSet& set, const VerifyOptions& opts, std::vector<Violation>& out)
      : set_(set), opts_(opts), out_(out) {}
  // false while lowering is in progress: missing producers/instructions are not yet errors.
  bool complete() const { return opts_.complete; }

  // One violation at instruction `index` of program `prog` (kNone: rank-level).
  void add(const char* rule, int32_t prog, int32_t index, std::string message);

  const Instr& instr(int32_t prog, int32_t index) const { return set_.programs[prog].instrs[index]; }
  Rank rank(int32_t prog) const { return set_.programs[prog].rank; }
  // "F mb0 s0 (#3 compute)": an instruction of the same rank.
  std::string local(int32_t prog, int32_t index) const;
  // "r2 #5 p2p BATCH{…}": an instruction of another rank.
  std::string remote(int32_t prog, int32_t index) const;
  // The instruction's text without its stream ("BATCH{…}"), for the subject of a message
  // whose location prefix already names the stream.
  std::string op(int32_t prog, int32_t index) const;
  // The name of the instruction's stream ("<stream id N>" for an id outside its program's
  // table, which the topology reports as a structure error).
  std::string stream_of(int32_t prog, int32_t index) const;

 private:
  const ProgramSet& set_;
  const VerifyOptions& opts_;
  std::vector<Violation>& out_;
};

using engine::ordinal;  // 1st, 2nd, 3rd, 4th, …

// The rules, one function each (files verify_<area>.cpp). Each appends to the report.
void check_structure(const engine::Topology& topo, Report& rep);
void check_deadlock(const engine::Topology& topo, const std::vector<PlatformKind>& platforms, Report& rep);
void check_p2p_fifo(const engine::Topology& topo, Report& rep);
void check_batch_shape(const engine::Topology& topo, Report& rep);
void check_collective_order(const engine::Topology& topo, Report& rep);
void check_communicator_order(const engine::Topology& topo, Report& rep);
void check_events(const engine::Topology& topo, Report& rep);
void check_happens_before(const engine::Topology& topo, Report& rep);  // also drain's hb part
void check_once(const engine::Topology& topo, Report& rep);            // reduce-once, reshard-once
void check_send_before_reduce(const engine::Topology& topo, Report& rep);
void check_drain_count(const engine::Topology& topo, Report& rep);

}  // namespace ppstream::verify_detail
