// Trials: compile and verify a plan once, then run the engine for as many straggler draws as
// asked on the one shared topology. A new draw changes only arrival delays (StragglerModel is a
// pure function of seed, trial, rank, collective kind and stage), so a trial costs one engine
// run (two under link sharing) and nothing else — and that run is a replay of the plan's tape
// (ppstream/engine/tape.h), recorded by its first run. `simulate` and `tune` both go through here.
//
//   const sim::CompiledPlan plan(cfg, ReducePolicy::ASYNC, /*cluster=*/true);  // compile + verify once
//   sim::TrialSetup setup = sim::trial_setup(cfg, plan.world());            // cost + straggler sections
//   setup.straggler.seed = 7;                                                // another draw family
//   std::vector<double> ms = sim::trial_step_times(plan, setup, 0, 100);    // trials 0..99, both cores
//
// Threads: trial_step_times runs independent trials on `threads` workers; every trial has its
// own cost model and engine state, the plan is only read, and results are stored by trial
// index, so the output is identical to a serial run for every thread count (tested). A const
// CompiledPlan may be shared by several threads (e.g. `tune` scoring plans in parallel).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/engine/engine.h"
#include "ppstream/engine/tape.h"
#include "ppstream/sim/cost_model.h"
#include "ppstream/sim/straggler.h"

namespace ppstream::engine {
struct Topology;
}

namespace ppstream::sim {

// How a trial's engine run is made (docs/simulate.md "Trials").
enum class TrialEngine : uint8_t {
  // The plan's tape for the platform replayed (ppstream/engine/tape.h: bit-equal to an engine
  // run); the first such run of the plan on a platform is the engine run that records it.
  TAPE,
  // A fresh engine run, no tape: a single run (recording would only cost), or the cross-check.
  ENGINE,
};

// One compiled, verified program set and its engine topology; immutable after construction
// (but for the tapes it records, one per platform, behind a lock).
class CompiledPlan {
 public:
  // Compiles `cfg` with data_parallel.reduce_grad = `policy` (NONE: keep the config's; required
  // when the config has no DP), verifies the one-replica set (no deadlock under strict
  // semantics and every static rule, docs/verify.md), then with `cluster` compiles the expanded
  // world (every DP replica; it is the one-replica set's replication and is not re-verified).
  // Throws ConfigError (policy without DP) and VerifyError (the programs do not verify).
  CompiledPlan(const PipelineConfig& cfg, ReducePolicy policy, bool cluster);
  ~CompiledPlan();
  CompiledPlan(CompiledPlan&&) noexcept;
  CompiledPlan& operator=(CompiledPlan&&) noexcept;

  const PipelineConfig& config() const;  // the config as compiled (policy applied)
  ReducePolicy policy() const;
  bool cluster() const;
  const World& world() const;             // the world of the set (expanded under cluster)
  const ProgramSet& programs() const;
  const engine::Topology& topology() const;  // src/engine/topology.h; points into programs()
  size_t instructions() const;            // over every program
  // The engine's run of the set under `opts` (opts.cost a model of programs(), or nullptr), as
  // engine::run_checked gives it, made as `how` says. Thread-safe: a second caller waits for the
  // recording run, then replays.
  EngineResult run(const EngineOptions& opts, TrialEngine how = TrialEngine::TAPE) const;
  // The plan's tape for `platform`: nullptr before its first TAPE run, or when that run deadlocked.
  std::shared_ptr<const Tape> tape(PlatformKind platform) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What a trial needs besides the plan: the cost section (durations) and the straggler section
// (arrival delays; `straggler.seed` selects the draw family, the trial index the draw).
struct TrialSetup {
  CostSpec cost;
  StragglerSpec straggler;
  PlatformKind platform = PlatformKind::ASCEND_MINDSPORE;  // a timed profile (strict is refused)
};

// The config's `cost:` and `straggler:` sections (defaults when absent), the straggler members
// checked against `world`. Throws ConfigError naming the key.
TrialSetup trial_setup(const PipelineConfig& cfg, const World& world);

// The cost model of draw `trial` (0-based) for `plan`; it keeps references into plan.programs().
SimCostModel trial_cost_model(const CompiledPlan& plan, const TrialSetup& setup, uint64_t trial);
// The straggler model of draw `trial`: what SimCostModel::with_straggler takes to turn one
// trial's model into another's (the per-instruction tables are built once, not per trial).
StragglerModel trial_straggler(const CompiledPlan& plan, const TrialSetup& setup, uint64_t trial);
// Whether draws differ: false when the straggler section has no distribution (its tails are
// fixed delays), so every trial's delays, and therefore its whole run, equal trial 0's. The
// runners below then run one draw and copy its figures to every trial index (the output is the
// one every separate run would give; docs/simulate.md "Trials").
bool draws_differ(const TrialSetup& setup);

// One trial's engine run with `model` (from trial_cost_model): every instruction's timing.
// Under link sharing (setup.cost.link_sharing != dedicated) a second run with the first run's
// overlaps as extra transfer time (the model's extras are set). `wall_ms`, when given, gets
// the engine's wall-clock time in ms. Throws std::invalid_argument for a deadlocked step (every
// blocked instruction named), a non-finite step time, or platform strict.
EngineResult run_trial(const CompiledPlan& plan, SimCostModel& model, PlatformKind platform,
                       double* wall_ms = nullptr, TrialEngine how = TrialEngine::TAPE);

// The error of a step time `step_ms` that is not finite (a sum of finite durations past a double)
// under `model`: std::invalid_argument naming the straggler tail when one exceeds every cost figure,
// else CostOverflow naming the largest cost figure and its key. The words depend on the policy, the
// cost and straggler sections and the world only, not on the trial or the rank: run_trial and the
// replica vector (simulate --cluster) throw the same text.
[[noreturn]] void throw_step_overflow(ReducePolicy policy, double step_ms, const SimCostModel& model);

// How the runners run each trial of `setup`: TAPE (the plan records its tape once and replays it)
// when the draws differ or links are shared, else ENGINE: one draw for every trial on dedicated
// links is one engine run, and a tape recorded then would never be replayed.
TrialEngine trial_engine(const TrialSetup& setup);

struct TrialRunOptions {
  int32_t threads = 0;  // workers; 0: one per hardware thread (std::thread::hardware_concurrency)
  // Called after each finished trial with (finished, count), under a lock, from a worker thread.
  std::function<void(int64_t, int64_t)> progress;
};

// Step times (ms, the engine's makespan) of draws first, first+1, …, first+count-1, in trial
// order; identical for every thread count. On an error (see run_trial) the remaining trials are
// abandoned and the error of the lowest failing trial index is rethrown.
std::vector<double> trial_step_times(const CompiledPlan& plan, const TrialSetup& setup, uint64_t first, int32_t count,
                                     const TrialRunOptions& opts = {});

// Runs work(0) … work(count-1) on up to `threads` workers (0: hardware threads), each index
// exactly once; rethrows the exception of the lowest failing index after every worker stopped.
// For callers that parallelize something else than trials of one plan (e.g. plans).
void parallel_for(int64_t count, int32_t threads, const std::function<void(int64_t)>& work);

}  // namespace ppstream::sim
