// The overlap-never-slower check over a verify grid (see sim/overlap_check.h).
#include "ppstream/sim/overlap_check.h"

#include <fmt/format.h>

#include <array>
#include <map>
#include <stdexcept>

#include "ppstream/engine/engine.h"
#include "ppstream/lower/lower.h"
#include "ppstream/sim/cost_model.h"

namespace ppstream::sim {

double default_step_ms(const ProgramSet& set, const PipelineConfig& c) {
  const SimCostModel cost(set, c, CostSpec{}, StragglerModel({}, set.world));
  EngineOptions eo;
  eo.platform = PlatformKind::ASCEND_MINDSPORE;
  eo.cost = &cost;
  const EngineResult r = run_engine(set, eo);
  if (!r.completed) throw std::runtime_error(summarize(c) + ": " + format_deadlock(set, r));
  return r.makespan_ms;
}

OverlapCheck check_overlap_never_slower(const GridOptions& grid, double tolerance) {
  // Step time per flag combination (bit 0 overlap_p2p, bit 1 overlap_b_f), keyed by the rest.
  // The grid varies overlap_p2p only; overlap_b_f is toggled here.
  std::map<std::string, std::array<double, 4>> steps;
  OverlapCheck out;
  LowerOptions lo;
  lo.verify_each_pass = false;
  for (const PipelineConfig& g : grid_configs(grid)) {
    PipelineConfig base = g;
    base.pipeline_parallel_overlap_p2p = false;
    auto it = steps.try_emplace(summarize(base), std::array<double, 4>{-1, -1, -1, -1}).first;
    const ProgramSet off = compile(g, lo);
    PipelineConfig with = g;
    with.pipeline_parallel_overlap_b_f = true;
    const ProgramSet on = compile(with, lo);
    if (on != off) out.regressions.push_back(summarize(with) + ": overlap_b_f changes the programs");
    const int p2p = g.pipeline_parallel_overlap_p2p ? 1 : 0;
    it->second[p2p] = default_step_ms(off, g);
    it->second[p2p | 2] = default_step_ms(on, with);
  }
  for (const auto& [key, t] : steps) {
    ++out.configs;
    // (off, on) pairs: overlap_p2p with b_f off/on, overlap_b_f with p2p off/on.
    for (auto [lo_i, hi_i] : {std::pair{0, 1}, std::pair{2, 3}, std::pair{0, 2}, std::pair{1, 3}}) {
      const char* flag = hi_i - lo_i == 1 ? "overlap_p2p" : "overlap_b_f";
      if (t[lo_i] < 0 || t[hi_i] < 0) {
        out.regressions.push_back(fmt::format("{}: the grid has no step with {} {}", key, flag, t[lo_i] < 0 ? "off" : "on"));
        continue;
      }
      ++out.comparisons;
      if (t[hi_i] > t[lo_i] * (1.0 + tolerance))
        out.regressions.push_back(fmt::format("{}: turning {} on: {} ms -> {} ms", key, flag, t[lo_i], t[hi_i]));
    }
  }
  return out;
}

}  // namespace ppstream::sim
