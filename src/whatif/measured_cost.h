// MeasuredCostModel: the engine's durations read from a table of measured per-instruction costs
// (a lifted ppstream trace, docs/whatif.md "Our traces"), instead of the `cost:` section's
// formulas. Units: ms. One row per program, one entry per instruction of the set it was built
// for; RECORD / WAIT have no cost (0).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ppstream/engine/engine.h"
#include "ppstream/program/ir.h"

namespace ppstream::whatif {

// What one instruction cost in the trace. `ms`: compute = its duration; BATCH = its end minus the
// latest post of its own and its mirrors' batches (the transfer); UNSHARD / REDUCE_GRAD = its
// end minus the last member's arrival (the transfer). `arrival_ms`: a collective member's
// arrival delay after it posted (the trace's args.arrival_delay_ms; 0 elsewhere).
struct MeasuredCost {
  double ms = 0;
  double arrival_ms = 0;
};

// Measured costs by rank and instruction key (instr_key: program/format.h op_text, "B mb15 s7",
// no rank, no stream, with its occurrence in the program: "UNSHARD s0#1" is the second), so that
// a set compiled under another reduction policy finds the same instruction's cost.
using MeasuredTable = std::vector<std::unordered_map<std::string, MeasuredCost>>;  // [rank]

// The keys of a program's instructions, in program order ("" for RECORD / WAIT).
std::vector<std::string> instr_keys(const Program& prog);

// Costs of `set`'s instructions ([program index][instr index]) from `table`; an instruction with
// a duration (compute, BATCH, collective) that the table lacks throws LiftError naming rank and
// instruction, except compute the trace drew with zero length (the writer omits those): 0.
std::vector<std::vector<MeasuredCost>> costs_for(const ProgramSet& set, const MeasuredTable& table);

class MeasuredCostModel : public CostModel {
 public:
  // `set` must outlive the model: the engine passes references into set.programs, which give
  // the row and column. `costs` has one row per program, one entry per instruction.
  MeasuredCostModel(const ProgramSet& set, std::vector<std::vector<MeasuredCost>> costs);
  double compute_ms(const Program& p, const Instr& i) const override { return at(p, i).ms; }
  double batch_ms(const Program& p, const Instr& i) const override { return at(p, i).ms; }
  double collective_ms(const Program& p, const Instr& i) const override { return at(p, i).ms; }
  double arrival_delay_ms(const Program& p, const Instr& i) const override { return at(p, i).arrival_ms; }
  // An expanded set has no members outside it.
  double external_arrival_ms(const Program&, const Instr&) const override { return 0.0; }

 private:
  const MeasuredCost& at(const Program& p, const Instr& i) const;
  const ProgramSet* set_;
  std::vector<std::vector<MeasuredCost>> costs_;
};

}  // namespace ppstream::whatif
