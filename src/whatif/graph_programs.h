// The lifted Megatron dependency graph (graph.h) as one step's stream programs, and a cost
// model that gives them a cost view's times (docs/whatif.md "Lifting as programs").
#pragma once

#include <cstdint>
#include <stdexcept>
#include <utility>
#include <string>
#include <vector>

#include "graph.h"
#include "job.h"
#include "ppstream/engine/engine.h"
#include "ppstream/engine/tape.h"
#include "ppstream/program/ir.h"

namespace ppstream::whatif {

// Worker (DP rank d, stage p) is rank p · dp + d of an expanded world (pp, vpp, shard = dp,
// replicate 1, mode none). Every template op of stage p is one instruction of each of its
// workers; a dependency between two streams is a RECORD after the producer and a WAIT before
// the consumer; `op_of` maps each instruction back to its template op (-1 for RECORD / WAIT).
struct GraphPrograms {
  ProgramSet set;
  std::vector<std::vector<int32_t>> op_of;  // [program][instruction]
  std::vector<char> grouped;                // [template op] → in a communication group (ends at its transfer)
  int32_t dp = 1;
  int64_t instructions() const;
};

// Throws LiftError when a group's workers are not a strided rank range, a P2P pair carries no
// compute's (microbatch, stage), or a compute op has no microbatch. Adds a note when an op
// follows, on its stream, an op it does not depend on (FIFO then adds that dependency).
GraphPrograms programs_of_graph(const Job& job, const Graph& g, std::vector<std::string>& notes);

// Which value of a cost view (sim_graph.h: dur, transfer, delay of template op k on local row j)
// the lifted programs take for each engine cost term (TapeCost names the CostModel call): F / B
// / OPT_STEP (COMPUTE) their dur, a BATCH its transfer, a COLLECTIVE its transfer (an op in no
// group, lifted as a COLLECTIVE of its worker alone: its dur), every lifted op its delay as the
// engine's launch delay (CostModel::launch_delay_ms: it starts that long after its dependencies
// are met, as the graph's op; RECORD / WAIT, op -1: none), and host issue and arrivals none.
// The one rule GraphCostModel and the engine evaluator's term table (engine_eval.h) both use.
enum class ViewField : uint8_t { ZERO, DUR, TRANSFER, DELAY };
inline ViewField view_field(TapeCost kind, const GraphPrograms& gp, int32_t op) {
  switch (kind) {
    case TapeCost::NONE:
    case TapeCost::HOST_ISSUE:
    case TapeCost::ARRIVAL:
    case TapeCost::ARRIVAL_OR_EXTERNAL: return ViewField::ZERO;
    case TapeCost::LAUNCH_DELAY: return op < 0 ? ViewField::ZERO : ViewField::DELAY;
    case TapeCost::COMPUTE:
    case TapeCost::BATCH:
    case TapeCost::COLLECTIVE: break;
  }
  if (op < 0) throw std::logic_error("whatif: a cost term on an instruction with no template op");
  if (kind == TapeCost::COMPUTE) return ViewField::DUR;
  if (kind == TapeCost::BATCH) return ViewField::TRANSFER;
  return gp.grouped[static_cast<size_t>(op)] ? ViewField::TRANSFER : ViewField::DUR;
}
template <class View>
double view_value(const View& view, ViewField f, int32_t op, int64_t row) {
  switch (f) {
    case ViewField::ZERO: return 0.0;
    case ViewField::DUR: return view.dur(op, row);
    case ViewField::TRANSFER: return view.transfer(op, row);
    case ViewField::DELAY: return view.delay(op, row);
  }
  return 0.0;
}

// A cost view's times (view_field) for the programs of step `step` of a run with dp rows per
// step (row j = step · dp + d). `view.delay` must be >= 0 (the engine's check).
template <class View>
class GraphCostModel final : public CostModel {
 public:
  GraphCostModel(const GraphPrograms& gp, const View& view, int32_t step) : gp_(gp), view_(view), step_(step) {}
  double compute_ms(const Program& p, const Instr& i) const override { return term(TapeCost::COMPUTE, p, i); }
  double batch_ms(const Program& p, const Instr& i) const override { return term(TapeCost::BATCH, p, i); }
  double collective_ms(const Program& p, const Instr& i) const override { return term(TapeCost::COLLECTIVE, p, i); }
  double launch_delay_ms(const Program& p, const Instr& i) const override { return term(TapeCost::LAUNCH_DELAY, p, i); }
  double host_issue_ms(const Program& p, const Instr& i) const override { return term(TapeCost::HOST_ISSUE, p, i); }
  double arrival_delay_ms(const Program& p, const Instr& i) const override { return term(TapeCost::ARRIVAL, p, i); }
  double external_arrival_ms(const Program& p, const Instr& i) const override {
    return term(TapeCost::ARRIVAL_OR_EXTERNAL, p, i);
  }

 private:
  const GraphPrograms& gp_;
  const View& view_;
  int32_t step_;
  double term(TapeCost kind, const Program& p, const Instr& i) const {
    const auto prog = static_cast<size_t>(&p - gp_.set.programs.data());
    const auto idx = static_cast<size_t>(&i - p.instrs.data());
    const int32_t k = gp_.op_of[prog][idx];
    return view_value(view_, view_field(kind, gp_, k), k, int64_t{step_} * gp_.dp + p.rank.v % gp_.dp);
  }
};

}  // namespace ppstream::whatif
