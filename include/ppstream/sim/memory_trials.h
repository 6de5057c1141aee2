// Trials with memory: like trial_step_times (sim/trials.h), each trial's step time and also its
// peak memory (sim/memory.h: the largest bytes any rank holds), from the same engine run.
// `simulate` (one-replica sets) and `tune` use it, so both report the same figures.
#pragma once

#include <cstdint>
#include <vector>

#include "ppstream/sim/memory.h"
#include "ppstream/sim/trials.h"

namespace ppstream::sim {

struct TrialFigures {
  std::vector<double> step_time_ms;       // per trial, in trial order
  std::vector<double> peak_memory_bytes;  // per trial: max over ranks
};

// Draws first … first+count-1 of `plan` (count >= 0) on opts.threads workers; identical for every
// thread count (each trial has its own cost model and engine state, results stored by index).
// Throws as run_trial does (the lowest failing trial's error).
TrialFigures trial_figures(const CompiledPlan& plan, const TrialSetup& setup, const MemorySpec& memory, uint64_t first,
                           int32_t count, const TrialRunOptions& opts = {});

}  // namespace ppstream::sim
