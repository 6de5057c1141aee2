// tune --from-trace (docs/tune.md "From a trace"): lift the traces of one job, pool their measured
// costs and per-step arrival delays (trace_costs.h), and run the search with every plan scored on
// them (TraceScoring).
#include <fmt/format.h>

#include <stdexcept>

#include "ppstream/analyze/readers.h"
#include "ppstream/tune/tune.h"
#include "ppstream/whatif/whatif.h"
#include "tune/scoring.h"

namespace ppstream::tune {

TraceJob lift_traces(const std::vector<std::string>& paths) {
  if (paths.empty()) throw std::invalid_argument("tune --from-trace: expected at least one trace");
  TraceJob job;
  auto stats = std::make_shared<tune_detail::TraceStats>();
  std::string first_yaml;
  if (const auto twice = analyze::repeated_path(paths))  // the same trace twice would pool its steps twice
    throw std::invalid_argument(fmt::format("tune --from-trace: {} is given twice (its steps would be pooled "
                                            "twice); give each trace once",
                                            *twice));
  for (const std::string& path : paths) {
    const whatif::LiftedTrace lifted = whatif::lift_ppstream_trace(path);
    const std::string yaml = to_yaml(lifted.config);
    if (job.paths.empty()) {
      job.config = lifted.config;
      job.config_path = lifted.config_path;
      first_yaml = yaml;
    } else if (yaml != first_yaml) {
      throw whatif::LiftError(fmt::format("tune --from-trace: {}: its config {} is not {} (the first trace's): give traces "
                                          "of one job (the same configuration, the same reduction policy)",
                                          path, lifted.config_path, job.config_path));
    }
    tune_detail::add_lifted(*stats, lifted);
    job.steps += static_cast<int32_t>(lifted.steps.size());
    job.paths.push_back(path);
  }
  job.stats = std::move(stats);
  return job;
}

TuneReport tune(const TraceJob& job, const TuneOptions& opts) {
  if (!job.stats || job.steps < 1) throw std::invalid_argument("tune --from-trace: the job has no measured step");
  const std::shared_ptr<const tune_detail::TraceStats> stats = job.stats;
  const uint64_t seed = opts.trace_seed;
  TuneReport r = tune_detail::search(job.config, opts, [stats, seed](const PipelineConfig& c) {
    return std::make_unique<tune_detail::TraceScoring>(c, stats, seed);
  });
  r.cost_source = "trace";
  r.trace_paths = job.paths;
  r.trace_config_path = job.config_path;
  r.trace_steps = job.steps;
  r.trace_seed = seed;
  return r;
}

}  // namespace ppstream::tune
