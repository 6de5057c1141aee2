// The overlap-never-slower check (issue 11): over every configuration of a verify grid, under
// the default cost model (docs/simulate.md, CostSpec{} and no stragglers), turning
// pipeline_parallel_overlap_p2p or pipeline_parallel_overlap_b_f on (the other flag fixed) must
// never make the simulated step (engine makespan, ascend-mindspore platform, ms) more than
// `tolerance` (a fraction: 0.005 = 0.5 %) slower, and overlap_b_f must leave the programs equal
// (it no longer changes the lowering). Used by the gtest (reduced grid) and by Python
// (ppstream._core.overlap_never_slower, the whole grid in tests/python).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ppstream/grid/grid.h"

namespace ppstream::sim {

struct OverlapCheck {
  int64_t configs = 0;                   // distinct configurations with the overlap flags off
  int64_t comparisons = 0;               // (off, on) step pairs compared: 4 per configuration
  std::vector<std::string> regressions;  // "<config>: turning overlap_p2p on: 10 ms -> 11 ms", …
};

// The simulated step (ms) of a compiled set under the default cost model, no stragglers,
// platform ascend-mindspore. Throws std::runtime_error naming the configuration on a deadlock.
double default_step_ms(const ProgramSet& set, const PipelineConfig& cfg);

// Throws std::runtime_error naming the configuration when a step does not complete (deadlock).
OverlapCheck check_overlap_never_slower(const GridOptions& grid, double tolerance = 0.005);

}  // namespace ppstream::sim
