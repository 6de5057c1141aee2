// trial_figures: one engine run per trial (sim/trials.h run_trial), its step time and peak memory.
#include "ppstream/sim/memory_trials.h"

#include <algorithm>
#include <mutex>

namespace ppstream::sim {

TrialFigures trial_figures(const CompiledPlan& plan, const TrialSetup& setup, const MemorySpec& memory, uint64_t first,
                           int32_t count, const TrialRunOptions& opts) {
  TrialFigures out;
  if (count <= 0) return out;
  out.step_time_ms.assign(static_cast<size_t>(count), 0.0);
  out.peak_memory_bytes.assign(static_cast<size_t>(count), 0.0);
  std::mutex progress_lock;
  int64_t finished = 0;
  const SimCostModel base = trial_cost_model(plan, setup, first);
  const bool differ = draws_differ(setup);  // else every draw is the first (sim/trials.h)
  const TrialEngine how = trial_engine(setup);  // one draw on dedicated links: no tape to record
  parallel_for(differ ? count : 1, opts.threads, [&](int64_t k) {
    SimCostModel model = base.with_straggler(trial_straggler(plan, setup, first + static_cast<uint64_t>(k)));
    const EngineResult run = run_trial(plan, model, setup.platform, nullptr, how);
    out.step_time_ms[static_cast<size_t>(k)] = run.makespan_ms;
    out.peak_memory_bytes[static_cast<size_t>(k)] =
        compute_memory(plan.programs(), run, plan.config().stage_layers, memory).peak_bytes;
    if (opts.progress) {
      const std::lock_guard<std::mutex> g(progress_lock);
      opts.progress(++finished, count);
    }
  });
  if (!differ) {
    std::fill(out.step_time_ms.begin() + 1, out.step_time_ms.end(), out.step_time_ms[0]);
    std::fill(out.peak_memory_bytes.begin() + 1, out.peak_memory_bytes.end(), out.peak_memory_bytes[0]);
    for (int64_t k = 1; opts.progress && k < count; ++k) opts.progress(++finished, count);
  }
  return out;
}

}  // namespace ppstream::sim
