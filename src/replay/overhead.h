// Replay's own runtime cost per instruction: the config's programs replayed with every duration
// zero, so the measured step is pure runtime overhead (thread hand-offs, events, MPI progress).
// `replay --calibrate` turns it into cost.host_issue_ms (docs/replay.md, "Calibration").
#pragma once

#include "ppstream/config/config.h"
#include "ppstream/replay/replay.h"

namespace ppstream::replay {

struct ZeroCostStep {
  double step_ms = 0;             // rank 0: the median of `steps` measured steps
  int64_t longest_program = 0;    // instructions of the longest rank program
  ReducePolicy policy = ReducePolicy::NONE;
};

// Every world rank calls this (collective over MPI_COMM_WORLD, whose size must be the config's
// world). The copy of `cfg` replayed keeps the sizes (activation, gradient and parameter bytes:
// replay's buffers) and zeroes every duration, bandwidth term and straggler delay.
ZeroCostStep zero_cost_step(const PipelineConfig& cfg, int me, int32_t steps);

}  // namespace ppstream::replay
