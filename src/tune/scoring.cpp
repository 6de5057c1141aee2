#include "tune/scoring.h"

#include <algorithm>

namespace ppstream::tune_detail {

std::string cost_text(const PipelineConfig& cfg) {
  const auto it = cfg.extra_sections.find("cost");
  return it == cfg.extra_sections.end() ? std::string() : it->second;
}

sim::TrialStats stats_of(const std::vector<double>& step_ms, int32_t trials) {
  sim::TrialStats s;
  s.step_time_ms.assign(step_ms.begin(), step_ms.begin() + trials);
  sim::summarize(s);
  return s;
}

std::vector<double> rank_peaks(const ProgramSet& set, const EngineResult& run, const PipelineConfig& cfg,
                               const sim::MemorySpec& memory) {
  std::vector<double> out;
  for (const sim::RankMemory& r : sim::compute_memory(set, run, cfg.stage_layers, memory).ranks) out.push_back(r.peak_bytes);
  return out;
}

PlanScoring::PlanScoring(const PipelineConfig& cfg)
    : plan_(cfg, cfg.mode == DPMode::NONE ? ReducePolicy::NONE : cfg.reduce_grad, false),
      setup_(sim::trial_setup(cfg, plan_.world())),
      memory_(sim::parse_memory_spec(cost_text(cfg), setup_.cost)) {}

sim::TrialStats PlanScoring::extend(int32_t trials) {
  if (trials > this->trials()) {
    const sim::TrialFigures more =
        sim::trial_figures(plan_, setup_, memory_, static_cast<uint64_t>(this->trials()), trials - this->trials());
    step_ms_.insert(step_ms_.end(), more.step_time_ms.begin(), more.step_time_ms.end());
    for (double b : more.peak_memory_bytes) peak_ = std::max(peak_, b);
  }
  return stats_of(step_ms_, trials);
}

std::vector<double> PlanScoring::peak_per_rank_trial0() const {
  sim::SimCostModel model = sim::trial_cost_model(plan_, setup_, 0);
  return rank_peaks(plan_.programs(), sim::run_trial(plan_, model, setup_.platform), plan_.config(), memory_);
}

}  // namespace ppstream::tune_detail
