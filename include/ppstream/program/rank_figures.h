// The per-rank figures the simulator (sim/metrics.h) and the analyzer (analyze/analyze.h) both
// report, with one name and one definition each; both RankMetrics types embed it, so a figure
// computed from a simulated step and read back from its trace has the same name (DESIGN.md
// names; docs/simulate.md "Outputs", docs/analyze.md "Metrics"). Times in ms.
#pragma once

#include <optional>

#include "ppstream/program/ir.h"

namespace ppstream {

struct RankFigures {
  Rank rank;
  // |∪ the rank's compute intervals|: F, B, I, W and OPT_STEP in the simulator (they run one at
  // a time on the compute stream, so their summed durations are the union), compute slices in
  // a trace. The producer's "Computing" column on Ascend.
  double compute_ms = 0;
  // Time the compute stream is blocked: stream waits on it (EVENT_WAIT) and collectives issued
  // on it (CommHandle.wait).
  double compute_wait_ms = 0;
  // Compute blocked on reductions (DESIGN.md): reductions issued on the compute stream plus its
  // waits that a reduction released.
  double reduce_exposed_ms = 0;
  // |∪ reduction intervals|: REDUCE_GRADs in the simulator (summed: they run one at a time on
  // one stream), is_reduction slices in a trace (analyze/timeline.h).
  double reduce_comm_ms = 0;
  double reduce_overlap_ms = 0;  // |∪ reduction intervals ∩ ∪ compute intervals|
  std::optional<double> reduce_overlap_ratio;  // reduce_overlap_ms / reduce_comm_ms; none without reductions
};

}  // namespace ppstream
