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
#include "ppstream/whatif/lifted.h"

namespace ppstream::whatif {

// MeasuredCost, MeasuredTable: ppstream/whatif/lifted.h.

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
  // `host_gap_ms` ([program][instr], outliving the model; nullptr: none) is the host's time before
  // each instruction (LiftedTrace::Step::host_gap_ms), given to the engine as its host issue
  // time: on a host-blocking profile the instruction is issued that long after the previous one
  // completed.
  MeasuredCostModel(const ProgramSet& set, std::vector<std::vector<MeasuredCost>> costs,
                    const std::vector<std::vector<double>>* host_gap_ms = nullptr);
  double compute_ms(const Program& p, const Instr& i) const override { return at(p, i).ms; }
  double batch_ms(const Program& p, const Instr& i) const override { return at(p, i).ms; }
  double collective_ms(const Program& p, const Instr& i) const override { return at(p, i).ms; }
  double arrival_delay_ms(const Program& p, const Instr& i) const override { return at(p, i).arrival_ms; }
  // An expanded set has no members outside it.
  double external_arrival_ms(const Program&, const Instr&) const override { return 0.0; }
  double host_issue_ms(const Program& p, const Instr& i) const override;

 private:
  const MeasuredCost& at(const Program& p, const Instr& i) const;
  const ProgramSet* set_;
  std::vector<std::vector<MeasuredCost>> costs_;
  const std::vector<std::vector<double>>* host_gap_ms_;
};

}  // namespace ppstream::whatif
