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

// A cost view (sim_graph.h: dur, transfer, delay of template op k on local row j) for the
// programs of step `step` of a run with `rows_per_step` = dp rows per step (row j = step · dp + d).
// F / B / OPT_STEP take dur, a BATCH and a COLLECTIVE their transfer (an op in no group, lifted
// as a COLLECTIVE of its worker alone: its dur), and every lifted op its delay as the engine's
// launch delay (CostModel::launch_delay_ms: it starts that long after its dependencies are
// met, as the graph's op; RECORD / WAIT: 0). `view.delay` must be >= 0 (the engine's check).
template <class View>
class GraphCostModel final : public CostModel {
 public:
  GraphCostModel(const GraphPrograms& gp, const View& view, int32_t step) : gp_(gp), view_(view), step_(step) {}
  double compute_ms(const Program& p, const Instr& i) const override {
    const auto [k, j] = at(p, i);
    return view_.dur(k, j);
  }
  double batch_ms(const Program& p, const Instr& i) const override {
    const auto [k, j] = at(p, i);
    return view_.transfer(k, j);
  }
  double collective_ms(const Program& p, const Instr& i) const override {
    const auto [k, j] = at(p, i);
    return gp_.grouped[static_cast<size_t>(k)] ? view_.transfer(k, j) : view_.dur(k, j);
  }
  double launch_delay_ms(const Program& p, const Instr& i) const override {
    const auto [k, j] = at(p, i);
    return k < 0 ? 0.0 : view_.delay(k, j);
  }

 private:
  const GraphPrograms& gp_;
  const View& view_;
  int32_t step_;
  std::pair<int32_t, int64_t> at(const Program& p, const Instr& i) const {
    const auto prog = static_cast<size_t>(&p - gp_.set.programs.data());
    const auto idx = static_cast<size_t>(&i - p.instrs.data());
    return {gp_.op_of[prog][idx], int64_t{step_} * gp_.dp + p.rank.v % gp_.dp};
  }
};

}  // namespace ppstream::whatif
