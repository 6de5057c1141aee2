#include "ppstream/sim/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include "ppstream/engine/engine.h"
#include "ppstream/lower/lower.h"
#include "ppstream/program/intervals.h"
#include "ppstream/sim/trace.h"
#include "engine/topology.h"
#include "verify/verify_topology.h"

namespace ppstream::sim {
namespace {

using Intervals = IntervalList<double>;

// Link sharing, first order: from a run without contention, each transfer (P2P batch after its
// match, REDUCE_GRAD after its last arrival) that overlaps the other kind's transfers on the
// same rank is lengthened — fully for the lower priority, by half each when shared fairly.
std::vector<std::vector<double>> link_extras(const ProgramSet& set, const EngineResult& run, const SimCostModel& cost) {
  const LinkSharing mode = cost.spec().link_sharing;
  std::vector<std::vector<double>> extra(set.programs.size());
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    Intervals p2p, reduce;
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      const InstrTiming& t = run.timing[p][k];
      if (i.op == OpKind::BATCH) p2p.emplace_back(t.end_ms - cost.base_batch_ms(i), t.end_ms);
      if (i.op == OpKind::REDUCE_GRAD) reduce.emplace_back(t.end_ms - cost.base_collective_ms(i), t.end_ms);
    }
    p2p = merge_intervals(std::move(p2p));
    reduce = merge_intervals(std::move(reduce));
    extra[p].assign(prog.instrs.size(), 0.0);
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      const InstrTiming& t = run.timing[p][k];
      if (i.op == OpKind::BATCH && mode != LinkSharing::P2P_PRIORITY) {
        const double o = covered_length({t.end_ms - cost.base_batch_ms(i), t.end_ms}, reduce);
        extra[p][k] = mode == LinkSharing::FAIR ? o / 2 : o;
      }
      if (i.op == OpKind::REDUCE_GRAD && mode != LinkSharing::REDUCE_PRIORITY) {
        const double o = covered_length({t.end_ms - cost.base_collective_ms(i), t.end_ms}, p2p);
        extra[p][k] = mode == LinkSharing::FAIR ? o / 2 : o;
      }
    }
  }
  return extra;
}

std::string with_suffix(const std::string& path, const std::string& suffix) {
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + "." + suffix;
  return path.substr(0, dot) + "." + suffix + path.substr(dot);
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) throw std::invalid_argument("simulate: cannot write " + path);
  f << text;
  if (!f) throw std::invalid_argument("simulate: error writing " + path);
}

}  // namespace

double percentile(std::vector<double> sample, double q) {
  if (sample.empty()) throw std::invalid_argument("percentile of an empty sample");
  std::sort(sample.begin(), sample.end());
  const auto n = static_cast<double>(sample.size());
  const auto rank = static_cast<size_t>(std::max(1.0, std::ceil(q / 100.0 * n)));
  return sample[std::min(rank, sample.size()) - 1];
}

std::vector<ReducePolicy> parse_policies(const std::string& text) {
  if (text == "inline") return {ReducePolicy::INLINE};
  if (text == "async") return {ReducePolicy::ASYNC};
  if (text == "both") return {ReducePolicy::INLINE, ReducePolicy::ASYNC};
  if (text.empty()) return {};
  throw std::invalid_argument("--reduce-grad " + text + ": expected inline, async or both");
}

namespace {

// The policies to simulate: the asked ones, else the config's own; checked against the options.
std::vector<ReducePolicy> policies_for(const PipelineConfig& cfg, const SimOptions& opts) {
  if (opts.trials < 1) throw std::invalid_argument(fmt::format("simulate: --trials {}: expected at least 1", opts.trials));
  std::vector<ReducePolicy> policies = opts.policies;
  if (policies.empty()) policies = {cfg.mode == DPMode::NONE ? ReducePolicy::NONE : cfg.reduce_grad};
  if (cfg.mode == DPMode::NONE && std::any_of(policies.begin(), policies.end(), [](ReducePolicy p) { return p != ReducePolicy::NONE; }))
    throw ConfigError("config: simulate --reduce-grad needs data parallelism (data_parallel.mode: fsdp or hsdp); this config has none");
  if (opts.platform == PlatformKind::STRICT)
    throw std::invalid_argument("simulate: platform strict is untimed (every duration is zero); use ascend-mindspore, "
                                "ascend-mindspore-one-comm-stream or cpu-serial");
  return policies;
}

// The report's header (world, cost section) and the straggler model's spec (the seed option
// applied) from the config's extra sections.
SimReport report_header(const PipelineConfig& cfg, const SimOptions& opts, StragglerSpec& straggler) {
  SimReport report;
  report.cluster = opts.cluster;
  report.platform = opts.platform;
  report.mode = cfg.mode;
  report.world = cfg.world(opts.cluster);
  const auto cost_it = cfg.extra_sections.find("cost");
  report.cost = cost_it == cfg.extra_sections.end() ? CostSpec{} : parse_cost_spec(cost_it->second, cfg.num_stages());
  const auto strag_it = cfg.extra_sections.find("straggler");
  straggler = strag_it == cfg.extra_sections.end() ? StragglerSpec{}
                                                   : parse_straggler_spec(strag_it->second, report.world, cfg.num_stages());
  if (opts.seed) straggler.seed = *opts.seed;
  report.seed = straggler.seed;
  return report;
}

// Lowers `c` into `set` and verifies the one-replica set once (the expanded world is its
// replication, too large to verify on every run); under --cluster `set` then becomes the
// expanded world. Returns the Topology of `set`, shared by the verifier and every engine run: it
// points at `set`, which must stay in place while the topology is used.
engine::Topology compile_verified(const PipelineConfig& c, ReducePolicy policy, bool cluster, ProgramSet& set) {
  LowerOptions once;
  once.verify_each_pass = false;
  set = compile(c, once);
  engine::Topology topo = engine::build_topology(set);
  if (auto violations = verify_topology(topo); !violations.empty())
    throw VerifyError(fmt::format("simulate: the {} programs do not verify", to_string(policy)), std::move(violations));
  if (!cluster) return topo;
  LowerOptions lo;
  lo.expanded = true;
  lo.verify_each_pass = false;
  topo = engine::Topology{};  // drop the one-replica tables before the expanded set exists
  set = compile(c, lo);
  return engine::build_topology(set);
}

// One trial: the engine run (a second run with the link-sharing extras unless links are
// dedicated), checked to have completed with a finite step time. `wall_ms`: the engine's time.
EngineResult run_trial(const engine::Topology& topo, SimCostModel& model, const SimOptions& opts, const CostSpec& cost,
                       ReducePolicy policy, double& wall_ms) {
  const ProgramSet& s = *topo.set;
  EngineOptions eo;
  eo.platform = opts.platform;
  eo.cost = &model;
  const auto t0 = std::chrono::steady_clock::now();
  EngineResult run = engine::run_checked(topo, eo);
  if (run.completed && cost.link_sharing != LinkSharing::DEDICATED) {
    model.set_extra_ms(link_extras(s, run, model));
    run = engine::run_checked(topo, eo);
  }
  wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!run.completed)
    throw std::invalid_argument(fmt::format("simulate: {} step did not complete:\n{}", to_string(policy), format_deadlock(s, run)));
  // Each duration is finite (the engine checks), but their sum can still overflow a double.
  if (!std::isfinite(run.makespan_ms))
    throw std::invalid_argument(fmt::format("simulate: {} step time is {} ms: the cost section's times add up beyond "
                                            "a double; expected costs whose step stays finite",
                                            to_string(policy), run.makespan_ms));
  return run;
}

// Trial 0 of a policy: its metrics (detail for replica 0) and, when asked, its Chrome trace.
void first_trial_outputs(const engine::Topology& topo, const EngineResult& run, const SimCostModel& model,
                         const ProgramFilter& replica0, const ProgramFilter& drawn, const std::string& trace_path,
                         const PipelineConfig& cfg, PolicyRun& pr) {
  const ProgramSet& s = *topo.set;
  MetricsOptions mo;
  mo.detail = replica0;
  mo.topology = &topo;
  pr.metrics = compute_metrics(s, run, model, mo);
  pr.engine_events = run.events_processed;
  if (trace_path.empty()) return;
  std::ofstream f(trace_path);
  if (!f) throw std::invalid_argument("simulate: cannot write " + trace_path);
  const SimMetrics& m = pr.metrics;
  write_chrome_trace(f, s, run, model, drawn,
                     fmt::format(R"({{"policy":"{}","step_time_ms":{},"bubble_ratio":{},"reduce_exposed_ms":{}}})",
                                 to_string(pr.policy), m.step_time_ms, m.bubble_ratio, m.reduce_exposed_ms));
  write_file(trace_path + ".config.yaml", to_yaml(cfg));
}

// Percentiles and mean of the trials' step times (non-empty).
void summarize(TrialStats& trials) {
  const auto& st = trials.step_time_ms;
  trials.p50_ms = percentile(st, 50);
  trials.p90_ms = percentile(st, 90);
  trials.p99_ms = percentile(st, 99);
  double sum = 0;
  for (double v : st) sum += v;
  trials.mean_ms = sum / static_cast<double>(st.size());
}

}  // namespace

// Per policy: compile and verify once, run every trial on the shared topology, keep trial 0's
// metrics (and trace), then the SVG of every policy's trial 0.
SimReport simulate(const PipelineConfig& cfg, const SimOptions& opts) {
  const std::vector<ReducePolicy> policies = policies_for(cfg, opts);
  StragglerSpec straggler;
  SimReport report = report_header(cfg, opts, straggler);
  const World world = report.world;
  const int64_t total = static_cast<int64_t>(policies.size()) * opts.trials;
  int64_t done = 0;
  const int32_t dp = world.dp();
  const ProgramFilter replica0 = [dp, cluster = opts.cluster](const Program& p) {
    return !cluster || p.rank.v == p.pp_rank * dp;
  };
  const ProgramFilter drawn = opts.trace_every_rank ? ProgramFilter{} : replica0;
  std::vector<ProgramSet> sets;
  std::vector<EngineResult> firsts;
  sets.reserve(policies.size());  // each topology points at its set: no reallocation
  for (ReducePolicy policy : policies) {
    PipelineConfig c = cfg;
    if (policy != ReducePolicy::NONE) c.reduce_grad = policy;
    sets.emplace_back();
    const engine::Topology topo = compile_verified(c, policy, opts.cluster, sets.back());
    const ProgramSet& s = sets.back();
    PolicyRun pr;
    pr.policy = policy;
    pr.programs = s.programs.size();
    for (const Program& p : s.programs) pr.instructions += p.instrs.size();
    for (int32_t trial = 0; trial < opts.trials; ++trial) {
      SimCostModel model(s, c, report.cost, StragglerModel(straggler, world, static_cast<uint64_t>(trial)));
      double wall_ms = 0;
      EngineResult run = run_trial(topo, model, opts, report.cost, policy, wall_ms);
      pr.trials.step_time_ms.push_back(run.makespan_ms);
      if (trial == 0) {
        pr.engine_wall_ms = wall_ms;
        const std::string path = policies.size() > 1 && !opts.trace_path.empty()
                                     ? with_suffix(opts.trace_path, to_string(policy))
                                     : opts.trace_path;
        first_trial_outputs(topo, run, model, replica0, drawn, path, c, pr);
        firsts.push_back(std::move(run));
      }
      if (opts.progress) opts.progress(++done, total, to_string(policy));
    }
    summarize(pr.trials);
    report.runs.push_back(std::move(pr));
    // Only the SVG needs a policy's programs and timings after its metrics (a cluster set is ~1 GB).
    if (opts.svg_path.empty()) sets.back() = ProgramSet{}, firsts.back() = EngineResult{};
  }
  if (!opts.svg_path.empty()) {
    std::vector<SvgPanel> panels;
    for (size_t n = 0; n < sets.size(); ++n)
      panels.push_back({fmt::format("reduce_grad: {}", to_string(policies[n])), &sets[n], &firsts[n]});
    write_file(opts.svg_path, render_svg(panels, replica0));
  }
  return report;
}

std::string simulate_json(const PipelineConfig& cfg, const std::string& reduce_grad, bool cluster, int32_t trials,
                          std::optional<uint64_t> seed, const std::string& trace_path, const std::string& svg_path,
                          const std::string& platform) {
  SimOptions o;
  const auto kind = parse_platform(platform);
  if (!kind) throw std::invalid_argument("simulate: platform '" + platform + "': " + "expected " + platform_names());
  o.platform = *kind;
  o.policies = parse_policies(reduce_grad);
  o.cluster = cluster;
  o.trials = trials;
  o.seed = seed;
  o.trace_path = trace_path;
  o.svg_path = svg_path;
  return report_json(simulate(cfg, o));
}

}  // namespace ppstream::sim
