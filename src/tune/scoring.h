// One plan's scoring, incrementally: compiled and verified once (sim::CompiledPlan), its trials
// run in order and kept, so a later rung of successive halving runs only the draws it adds.
// The figures are exactly what `simulate --trials N` reports for the same config (both run
// sim::run_trial on trial 0 … N-1 and take nearest-rank percentiles).
#pragma once

#include <cstdint>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/sim/memory_trials.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/sim/trials.h"

namespace ppstream::tune_detail {

class PlanScoring {
 public:
  // Compiles and verifies `cfg` (its own reduction policy). Throws as sim::CompiledPlan does.
  explicit PlanScoring(const PipelineConfig& cfg);
  // Runs trials up to `trials` (no-op for those already run); returns their statistics.
  sim::TrialStats extend(int32_t trials);
  int32_t trials() const { return static_cast<int32_t>(step_ms_.size()); }
  // Max over ranks and the trials run.
  double peak_memory_bytes() const { return peak_; }
  // Trial 0's peak per program (one more engine run; for the plans reported).
  std::vector<double> peak_per_rank_trial0() const;

 private:
  sim::CompiledPlan plan_;
  sim::TrialSetup setup_;
  sim::MemorySpec memory_;
  std::vector<double> step_ms_;
  double peak_ = 0;
};

}  // namespace ppstream::tune_detail
