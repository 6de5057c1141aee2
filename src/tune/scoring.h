// One plan's scoring, incrementally: compiled and verified once (sim::CompiledPlan), its trials
// run in order and kept, so a later rung of successive halving runs only the draws it adds.
// Two sources of costs and tails: the config's (PlanScoring: exactly what `simulate --trials N`
// reports for the same config, both run sim::run_trial on trial 0 … N-1 and take nearest-rank
// percentiles) and a measured job's (TraceScoring, `tune --from-trace`: trace_costs.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/sim/memory_trials.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/sim/trials.h"
#include "ppstream/tune/tune.h"
#include "tune/trace_costs.h"

namespace ppstream::tune_detail {
using tune::TuneOptions;
using tune::TuneReport;

class Scoring {
 public:
  virtual ~Scoring() = default;
  // Runs trials up to `trials` (no-op for those already run); returns their statistics.
  virtual sim::TrialStats extend(int32_t trials) = 0;
  virtual int32_t trials() const = 0;
  // Max over ranks and the trials run.
  virtual double peak_memory_bytes() const = 0;
  // Trial 0's peak per program (one more engine run; for the plans reported).
  virtual std::vector<double> peak_per_rank_trial0() const = 0;
  // Where the plan's costs came from (from a trace; empty for the config's cost model).
  virtual CostOrigins origins() const { return {}; }
  // Does the memory model have an input (a byte size > 0 among sim::MemorySpec's)? When none,
  // every plan's peak is 0 B and a memory budget cannot bind.
  virtual bool models_memory() const { return true; }
};

// Any byte size > 0 (stash, unsharded parameters, gradient buffer, receive buffer)?
inline bool has_byte_sizes(const sim::MemorySpec& m) {
  return m.stash_bytes_per_layer > 0 || m.unsharded_param_bytes_per_layer > 0 || m.grad_buffer_bytes_per_layer > 0 ||
         m.recv_buffer_bytes > 0;
}

// Builds the scoring of one plan (its config); throws as sim::CompiledPlan does.
using ScoringFactory = std::function<std::unique_ptr<Scoring>(const PipelineConfig&)>;

class PlanScoring : public Scoring {
 public:
  // Compiles and verifies `cfg` (its own reduction policy). Throws as sim::CompiledPlan does.
  explicit PlanScoring(const PipelineConfig& cfg);
  sim::TrialStats extend(int32_t trials) override;
  int32_t trials() const override { return static_cast<int32_t>(step_ms_.size()); }
  double peak_memory_bytes() const override { return peak_; }
  std::vector<double> peak_per_rank_trial0() const override;
  bool models_memory() const override { return has_byte_sizes(memory_); }

 private:
  sim::CompiledPlan plan_;
  sim::TrialSetup setup_;
  sim::MemorySpec memory_;
  std::vector<double> step_ms_;
  double peak_ = 0;
};

// A plan scored on a measured job: compiled expanded over the trace's world (one-replica set
// verified, as CompiledPlan with cluster), each instruction's cost from `stats`, trial t's arrival
// delays from the measured step trial_steps(seed, t, …) drew for each rank; the memory model on
// every trial. Trials run on both cores; results identical to a serial run.
class TraceScoring : public Scoring {
 public:
  TraceScoring(const PipelineConfig& cfg, std::shared_ptr<const TraceStats> stats, uint64_t seed);
  sim::TrialStats extend(int32_t trials) override;
  int32_t trials() const override { return static_cast<int32_t>(step_ms_.size()); }
  double peak_memory_bytes() const override { return peak_; }
  std::vector<double> peak_per_rank_trial0() const override;
  CostOrigins origins() const override { return costs_->origins(); }
  bool models_memory() const override { return has_byte_sizes(memory_); }

 private:
  EngineResult run(uint64_t trial) const;  // throws std::invalid_argument on a deadlock
  std::shared_ptr<const TraceStats> stats_;
  uint64_t seed_ = 0;
  sim::CompiledPlan plan_;
  sim::TrialSetup setup_;
  sim::MemorySpec memory_;
  std::unique_ptr<PlanTraceCosts> costs_;  // points into plan_, setup_ and *stats_
  std::vector<double> step_ms_;
  double peak_ = 0;
};

// Step-time statistics (sim::summarize) of the first `trials` of `step_ms`.
sim::TrialStats stats_of(const std::vector<double>& step_ms, int32_t trials);
// Seconds since the search started (a test's fake clock; empty: the steady clock).
using ElapsedClock = std::function<double()>;
// The search (search.cpp) with plans scored by `make`.
TuneReport search(const PipelineConfig& cfg, const TuneOptions& opts, ScoringFactory make, ElapsedClock clock = {});

// Peak bytes per program of one engine run (sim::compute_memory).
std::vector<double> rank_peaks(const ProgramSet& set, const EngineResult& run, const PipelineConfig& cfg,
                               const sim::MemorySpec& memory);
// The config's cost section text ("" when absent).
std::string cost_text(const PipelineConfig& cfg);

}  // namespace ppstream::tune_detail
