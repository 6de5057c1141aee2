// tune --from-trace (docs/tune.md "From a trace"): lift the traces of one job, pool their measured
// costs and per-step arrival delays (trace_costs.h), and run the search with every plan scored on
// them (TraceScoring).
#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

#include "ppstream/analyze/readers.h"
#include "ppstream/tune/tune.h"
#include "ppstream/whatif/whatif.h"
#include "tune/scoring.h"

namespace ppstream::tune {
namespace {

// One trace lifted, its faults named as tune's. Only a ppstream trace: tune compiles variants of
// the job's config, which a Megatron timeline does not carry (whatif studies those).
whatif::LiftedTrace lift_one(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !whatif::is_ppstream_trace(path))
    throw whatif::LiftError(fmt::format(
        "tune --from-trace {}: not a ppstream trace; tune takes a trace of `ppstream simulate --cluster "
        "--trace-every-rank --trace T.json` (T.json.config.yaml beside it), a `replay --trace DIR` directory or a "
        "`train` run directory, because every plan is a variant of the job's config, compiled again. A Megatron "
        "timeline has no config to compile: study it with `ppstream whatif {}` (docs/tune.md \"From a trace\")",
        path, path));
  try {
    return whatif::lift_ppstream_trace(path);
  } catch (const whatif::LiftError& e) {
    std::string what = e.what();
    if (what.starts_with("whatif: ")) what.erase(0, 8);
    throw whatif::LiftError("tune --from-trace: " + what);
  }
}

}  // namespace

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
    const whatif::LiftedTrace lifted = lift_one(path);
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
