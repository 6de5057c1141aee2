// The place-reductions pass on one program (src/lower/pass_place_reductions.cpp), for callers
// outside the lowering: one REDUCE_GRAD per local stage (per bucket piece), after the stage's
// last backward, inline on `compute` or async on `reduce` with one drain. `compile` runs it
// with the config's policy and the drain before OPT_STEP; `ppstream whatif` runs it on a lifted
// Megatron program whose gradient collectives it stripped (docs/whatif.md "Counterfactual"),
// with the drain before the first instruction that waited on them.
#pragma once

#include <cstddef>
#include <functional>

#include "ppstream/program/ir.h"

namespace ppstream {

struct ReductionPlacement {
  ReducePolicy policy = ReducePolicy::INLINE;
  bool sync_last_reduce = false;  // data_parallel.sync_last_reduce (async only)
  // Where the async drain (one WAIT per reduction) and the sync tail go: before each
  // instruction k of the program as it was before the pass for which this returns true, on that
  // instruction's stream. Empty: before each OPT_STEP.
  std::function<bool(const Program&, size_t k)> drain_before;
};

// Places the reductions of `p` in place. Policy NONE leaves it unchanged. The program must hold
// each local stage's backwards (program/deps.h stage_backwards) and, for async, the BATCHes that
// send their input gradients when they exist.
void place_program_reductions(Program& p, const ReductionPlacement& rp);

}  // namespace ppstream
