// Link sharing, first order (docs/simulate.md "link sharing"): the extra transfer time of each
// instruction from a run without contention.
#pragma once

#include <vector>

#include "ppstream/engine/engine.h"
#include "ppstream/sim/cost_model.h"

namespace ppstream::sim {

// Per [program index][instr index]: each transfer (P2P batch after its match, REDUCE_GRAD after
// its last arrival) that overlaps the other kind's transfers on the same rank is lengthened —
// fully for the lower priority, by half each when shared fairly.
std::vector<std::vector<double>> link_extras(const ProgramSet& set, const EngineResult& run, const SimCostModel& cost);

}  // namespace ppstream::sim
