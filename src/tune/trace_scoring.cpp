// TraceScoring (tune/scoring.h): a plan's trials on a measured job's costs and observed tails.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "engine/topology.h"
#include "tune/scoring.h"

namespace ppstream::tune_detail {

TraceScoring::TraceScoring(const PipelineConfig& cfg, std::shared_ptr<const TraceStats> stats, uint64_t seed)
    : stats_(std::move(stats)),
      seed_(seed),
      plan_(cfg, cfg.mode == DPMode::NONE ? ReducePolicy::NONE : cfg.reduce_grad, /*cluster=*/true),
      setup_(sim::trial_setup(cfg, plan_.world())),
      memory_(sim::parse_memory_spec(cost_text(cfg), setup_.cost)),
      costs_(std::make_unique<PlanTraceCosts>(plan_, setup_, *stats_)) {}

EngineResult TraceScoring::run(uint64_t trial) const {
  const World& w = plan_.world();
  const std::vector<int32_t> steps = trial_steps(seed_, trial, w.pp * w.dp(), stats_->steps());
  const TraceCostModel model(plan_.programs(), costs_->base_ms(), costs_->arrivals(steps, trial), setup_.cost.host_issue_ms);
  EngineOptions eo;
  eo.platform = setup_.platform;
  eo.cost = &model;
  EngineResult r = engine::run_checked(plan_.topology(), eo);
  if (!r.completed)
    throw std::invalid_argument(fmt::format("tune --from-trace: trial {} did not complete:\n{}", trial,
                                            format_deadlock(plan_.programs(), r)));
  return r;
}

sim::TrialStats TraceScoring::extend(int32_t trials) {
  const int32_t first = this->trials();
  if (trials > first) {
    const auto n = static_cast<size_t>(trials - first);
    std::vector<double> ms(n), peak(n);
    sim::parallel_for(static_cast<int64_t>(n), 0, [&](int64_t k) {
      const EngineResult r = run(static_cast<uint64_t>(first + k));
      ms[static_cast<size_t>(k)] = r.makespan_ms;
      const std::vector<double> peaks = rank_peaks(plan_.programs(), r, plan_.config(), memory_);
      peak[static_cast<size_t>(k)] = peaks.empty() ? 0.0 : *std::max_element(peaks.begin(), peaks.end());
    });
    step_ms_.insert(step_ms_.end(), ms.begin(), ms.end());
    for (double b : peak) peak_ = std::max(peak_, b);
  }
  return stats_of(step_ms_, trials);
}

std::vector<double> TraceScoring::peak_per_rank_trial0() const {
  return rank_peaks(plan_.programs(), run(0), plan_.config(), memory_);
}

}  // namespace ppstream::tune_detail
