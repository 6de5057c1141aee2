#include "ppstream/sim/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "ppstream/analyze/readers.h"
#include "ppstream/engine/engine.h"
#include "ppstream/engine/replica_tape.h"
#include "ppstream/sim/trace.h"
#include "ppstream/sim/memory_trials.h"
#include "ppstream/sim/trials.h"
#include "engine/topology.h"

namespace ppstream::sim {
namespace {

std::string with_suffix(const std::string& path, const std::string& suffix) {
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + "." + suffix;
  return path.substr(0, dot) + "." + suffix + path.substr(dot);
}

// The errno of the failed open or write (EIO when the stream set none).
[[noreturn]] void cannot_write(const std::string& path, const char* verb) {
  const int err = errno == 0 ? EIO : errno;
  throw WriteError(fmt::format("simulate: {} {}: {}", verb, path, std::strerror(err)), path, err);
}

std::ofstream open_output(const std::string& path) {
  errno = 0;
  std::ofstream f(path);
  if (!f) cannot_write(path, "cannot write");
  return f;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f = open_output(path);
  f << text;
  if (!f.flush()) cannot_write(path, "error writing");
}

// Every file the run will write (the trace per policy, its .config.yaml, the SVG) against the files
// it read and against each other: one that is an input, or two outputs that are one file (whatever
// the spelling), would be overwritten after the run, so they are refused before any work.
void check_outputs(const SimOptions& opts, const std::vector<ReducePolicy>& policies) {
  std::vector<std::pair<std::string, std::string>> outs;
  for (ReducePolicy policy : policies) {
    if (opts.trace_path.empty()) break;
    const std::string t = policies.size() > 1 ? with_suffix(opts.trace_path, to_string(policy)) : opts.trace_path;
    outs.emplace_back("--trace", t);
    outs.emplace_back("the configuration beside --trace", t + ".config.yaml");
  }
  if (!opts.svg_path.empty()) outs.emplace_back("--svg", opts.svg_path);
  for (const auto& [what, out] : outs)
    if (const auto in = analyze::input_named_by(out, opts.inputs))
      throw std::invalid_argument(
          fmt::format("simulate: {} {}: is {}, which the run reads; write to another file", what, out, *in));
  if (const auto twice = analyze::same_output(outs))
    throw std::invalid_argument(fmt::format("simulate: {}; write them to different files", *twice));
}

}  // namespace

double percentile(std::vector<double> sample, double q) {
  if (sample.empty()) throw std::invalid_argument("percentile of an empty sample");
  std::sort(sample.begin(), sample.end());
  const auto n = static_cast<double>(sample.size());
  const auto rank = static_cast<size_t>(std::max(1.0, std::ceil(q / 100.0 * n)));
  return sample[std::min(rank, sample.size()) - 1];
}

void summarize(TrialStats& trials) {
  const auto& st = trials.step_time_ms;
  trials.p50_ms = percentile(st, 50);
  trials.p90_ms = percentile(st, 90);
  trials.p99_ms = percentile(st, 99);
  double sum = 0;
  for (double v : st) sum += v;
  trials.mean_ms = sum / static_cast<double>(st.size());
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
  TrialSetup setup = trial_setup(cfg, report.world);
  report.cost = setup.cost;
  const auto cost_it = cfg.extra_sections.find("cost");
  report.memory = parse_memory_spec(cost_it == cfg.extra_sections.end() ? std::string() : cost_it->second, report.cost);
  straggler = std::move(setup.straggler);
  if (opts.seed && *opts.seed > kMaxSeed)
    throw std::invalid_argument(fmt::format("simulate: --seed {}: expected {}", *opts.seed, kSeedRange));
  if (opts.seed) straggler.seed = *opts.seed;
  report.seed = straggler.seed;
  return report;
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
  std::ofstream f = open_output(trace_path);
  const SimMetrics& m = pr.metrics;
  write_chrome_trace(f, s, run, model, drawn,
                     fmt::format(R"({{"policy":"{}","step_time_ms":{},"bubble_ratio":{},"reduce_exposed_ms":{}}})",
                                 to_string(pr.policy), m.step_time_ms, m.bubble_ratio, m.reduce_exposed_ms));
  if (!f.flush()) cannot_write(trace_path, "error writing");
  write_file(trace_path + ".config.yaml", to_yaml(cfg));
}

// A step time of the replica vector that is not finite: replica_policy throws throw_step_overflow's
// words (not caught as a cost fault there, which falls back to the expanded run).
struct StepOverflow {
  double step_ms;
};

// replica_policy's run (tmpl is renumbered per replica while its metrics are computed, and back);
// throws what the cost checks throw.
std::string replica_policy_run(ProgramSet& tmpl, const PipelineConfig& compiled, ReducePolicy policy,
                               const TrialSetup& setup, const MemorySpec& memory, const SimOptions& opts,
                               const ProgramFilter& replica0, const std::function<void(int64_t)>& tick, PolicyRun& pr) {
  const World world = tmpl.world;
  const auto t0 = std::chrono::steady_clock::now();
  const SimCostModel model(tmpl, compiled, setup.cost, StragglerModel(setup.straggler, world, 0));
  const ReplicaTape tape = record_replica_tape(tmpl, {opts.platform, &model});
  if (!tape.tape) return "the template run deadlocked (the expanded run reports it)";
  std::optional<ReplicaRun> run(replay_replicas(tape, &model));
  pr.engine_wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const double first = run->makespan_ms();
  // Words that depend on no rank or trial (throw_step_overflow): thrown here, as the expanded run
  // would throw them after a second run of the whole world.
  if (!std::isfinite(first)) throw StepOverflow{first};
  const auto dp = static_cast<size_t>(world.dp());
  size_t instrs = 0;
  for (const Program& p : tmpl.programs) instrs += p.instrs.size();
  PolicyRun out;
  out.policy = policy;
  out.engine_wall_ms = pr.engine_wall_ms;
  out.programs = tmpl.programs.size() * dp;
  out.instructions = instrs * dp;
  out.engine_events = static_cast<int64_t>(instrs * dp);  // one completion per instruction
  {
    // Swept for replica 0, listed for every rank as the expanded path lists them (the others
    // not computed; compute_memory's `only`).
    MemoryReport m0 = compute_memory(tmpl, run->replica(0), compiled.stage_layers, memory, false, replica0);
    out.memory.peak_bytes = m0.peak_bytes;
    out.memory.peak_rank = m0.peak_rank;
    out.memory.ranks.reserve(tmpl.programs.size() * dp);
    for (size_t p = 0; p < tmpl.programs.size(); ++p) {
      const Program& prog = tmpl.programs[p];
      out.memory.ranks.push_back(std::move(m0.ranks[p]));
      for (size_t d = 1; d < dp; ++d)
        out.memory.ranks.push_back({Rank{prog.rank.v + static_cast<int32_t>(d)}, prog.pp_rank, 0, 0, {}, 0, {}, false});
    }
  }
  out.peak_memory_bytes = out.memory.peak_bytes;
  {
    const engine::Topology topo = engine::build_topology(tmpl, true);
    MetricsOptions mo;
    mo.detail = replica0;
    mo.topology = &topo;
    out.metrics = compute_replica_metrics(tmpl, topo, *run, model, mo);
  }
  run.reset();  // trial 0's timings: the trials below need their own slots only
  std::vector<double> steps(static_cast<size_t>(opts.trials), first);
  if (draws_differ(setup) && opts.trials > 1) {
    std::mutex pool_mu;  // slot buffers, one per worker at a time (as trials.cpp's replay_draws)
    std::vector<std::unique_ptr<std::vector<double>>> pool;
    parallel_for(opts.trials - 1, opts.threads, [&](int64_t j) {
      std::unique_ptr<std::vector<double>> buf;
      {
        const std::lock_guard<std::mutex> lock(pool_mu);
        if (!pool.empty()) buf = std::move(pool.back()), pool.pop_back();
      }
      if (!buf) buf = std::make_unique<std::vector<double>>();
      const SimCostModel mk = model.with_straggler(StragglerModel(setup.straggler, world, static_cast<uint64_t>(j + 1)));
      steps[static_cast<size_t>(j + 1)] = replay_replicas(tape, &mk, false, buf.get()).makespan_ms();
      const std::lock_guard<std::mutex> lock(pool_mu);
      pool.push_back(std::move(buf));
    });
    for (double ms : steps)
      if (!std::isfinite(ms)) throw StepOverflow{ms};
  }
  out.trials.step_time_ms = std::move(steps);
  pr = std::move(out);
  tick(opts.trials);
  return {};
}

// Cluster mode from replica 0's template tape (ppstream/engine/replica_tape.h): trial 0's
// metrics and memory and every trial's step time, as the expanded world's runs give them.
// Where it cannot (a deadlock, a cost beyond a double, named collective groups) it returns why,
// and pr holds nothing of use: the expanded path then runs and reports the fault with its own
// messages, so that both engines word a fault alike (the first infinite cost the expanded engine
// meets, say, is not the vector's first). Empty when it ran. A step time beyond a double is
// thrown here with run_trial's words (throw_step_overflow: they name no rank or trial).
std::string replica_policy(const PipelineConfig& cfg, ReducePolicy policy, const TrialSetup& setup, const MemorySpec& memory,
                           const SimOptions& opts, const ProgramFilter& replica0, const std::function<void(int64_t)>& tick,
                           PolicyRun& pr) {
  ProgramSet tmpl;
  PipelineConfig compiled;
  {
    const CompiledPlan one(cfg, policy, false);  // compiled and verified as the expanded path does
    if (!one.topology().named.empty()) return "the config names collective groups, which the replica template does not form";
    compiled = one.config();
    tmpl = replica_template(one.programs(), compiled.world(true));
  }
  try {
    return replica_policy_run(tmpl, compiled, policy, setup, memory, opts, replica0, tick, pr);
  } catch (const std::invalid_argument&) {  // engine::checked_cost: a cost that is not finite or < 0
    return "a cost is not finite (the expanded run reports it)";
  } catch (const StepOverflow& e) {  // the same words as the expanded run's, without that run
    throw_step_overflow(policy, e.step_ms, SimCostModel(tmpl, compiled, setup.cost, StragglerModel(setup.straggler, tmpl.world, 0)));
  }
}

}  // namespace

// Per policy: compile and verify once, run every trial on the shared topology, keep trial 0's
// metrics (and trace), then the SVG of every policy's trial 0.
SimReport simulate(const PipelineConfig& cfg, const SimOptions& opts) {
  const std::vector<ReducePolicy> policies = policies_for(cfg, opts);
  check_outputs(opts, policies);
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
  std::vector<std::optional<CompiledPlan>> plans;
  std::vector<EngineResult> firsts;
  const TrialSetup setup{report.cost, straggler, opts.platform};
  // The replica vector where it can express the run; else (a note says why) the expanded engine.
  const char* not_vector = setup.cost.link_sharing != LinkSharing::DEDICATED
                               ? "cost.link_sharing is not dedicated (the vector evaluates dedicated links only)"
                           : !opts.trace_path.empty() ? "--trace is drawn from the expanded run"
                           : !opts.svg_path.empty()   ? "--svg is drawn from the expanded run"
                                                      : nullptr;
  const bool vector = opts.cluster && opts.replica_vector && not_vector == nullptr;
  const auto expanded_because = [&](const std::string& why, ReducePolicy policy) {
    if (opts.note)
      opts.note(fmt::format("simulate: note: reduce_grad {}: the expanded engine ran, not the replica vector: {}",
                            to_string(policy), why));
  };
  for (ReducePolicy policy : policies) {
    if (opts.cluster && opts.replica_vector && not_vector != nullptr) expanded_because(not_vector, policy);
    if (vector) {
      PolicyRun pr;
      const auto tick = [&](int64_t n) {
        for (int64_t k = 0; k < n; ++k)
          if (opts.progress) opts.progress(++done, total, to_string(policy));
      };
      const std::string why = replica_policy(cfg, policy, setup, report.memory, opts, replica0, tick, pr);
      if (why.empty()) {
        summarize(pr.trials);
        report.runs.push_back(std::move(pr));
        continue;
      }
      expanded_because(why, policy);
    }
    plans.emplace_back(std::in_place, cfg, policy, opts.cluster);
    const CompiledPlan& plan = *plans.back();
    PolicyRun pr;
    pr.policy = policy;
    pr.programs = plan.programs().programs.size();
    pr.instructions = plan.instructions();
    // Trial 0 keeps every timing (metrics, trace, SVG, memory curves); the others their step
    // time and peak memory (a cluster: step time only, its peak is trial 0's; memory.h).
    SimCostModel model = trial_cost_model(plan, setup, 0);
    // One run alone (no other draw after it, no link sharing's second run) is cheaper without a
    // tape; fixed tails make every trial this draw (draws_differ).
    const bool again = (opts.trials > 1 && draws_differ(setup)) || setup.cost.link_sharing != LinkSharing::DEDICATED;
    EngineResult run = run_trial(plan, model, opts.platform, &pr.engine_wall_ms, again ? TrialEngine::TAPE : TrialEngine::ENGINE);
    pr.trials.step_time_ms.push_back(run.makespan_ms);
    pr.memory = compute_memory(plan.programs(), run, plan.config().stage_layers, report.memory, !opts.svg_path.empty(),
                               opts.cluster ? replica0 : ProgramFilter{});
    pr.peak_memory_bytes = pr.memory.peak_bytes;
    const std::string path = policies.size() > 1 && !opts.trace_path.empty()
                                 ? with_suffix(opts.trace_path, to_string(policy))
                                 : opts.trace_path;
    first_trial_outputs(plan.topology(), run, model, replica0, drawn, path, plan.config(), pr);
    firsts.push_back(std::move(run));
    if (opts.progress) opts.progress(++done, total, to_string(policy));
    TrialRunOptions to;
    to.threads = opts.threads;
    if (opts.progress)
      to.progress = [&, base = done](int64_t k, int64_t) { opts.progress(base + k, total, to_string(policy)); };
    if (opts.cluster) {
      const std::vector<double> rest = trial_step_times(plan, setup, 1, opts.trials - 1, to);
      pr.trials.step_time_ms.insert(pr.trials.step_time_ms.end(), rest.begin(), rest.end());
    } else {
      const TrialFigures rest = trial_figures(plan, setup, report.memory, 1, opts.trials - 1, to);
      pr.trials.step_time_ms.insert(pr.trials.step_time_ms.end(), rest.step_time_ms.begin(), rest.step_time_ms.end());
      for (double b : rest.peak_memory_bytes) pr.peak_memory_bytes = std::max(pr.peak_memory_bytes, b);
    }
    done += opts.trials - 1;
    summarize(pr.trials);
    report.runs.push_back(std::move(pr));
    // Only the SVG needs a policy's programs and timings after its metrics (a cluster set is ~1 GB).
    if (opts.svg_path.empty()) plans.back().reset(), firsts.back() = EngineResult{};
  }
  if (!opts.svg_path.empty()) {
    std::vector<SvgPanel> panels;
    for (size_t n = 0; n < plans.size(); ++n)
      panels.push_back({fmt::format("reduce_grad: {}", to_string(policies[n])), &plans[n]->programs(), &firsts[n],
                        &report.runs[n].memory});
    write_file(opts.svg_path, render_svg(panels, replica0));
  }
  return report;
}

void check_cluster_only(bool cluster, bool trace_every_rank, const std::string& cluster_engine) {
  if (cluster) return;
  if (!cluster_engine.empty())
    throw std::invalid_argument("simulate --cluster-engine " + cluster_engine + ": only with --cluster");
  if (trace_every_rank)
    throw std::invalid_argument(
        "simulate --trace-every-rank: only with --cluster (without it the trace draws one replica, every rank of it)");
}

std::string simulate_json(const PipelineConfig& cfg, const std::string& reduce_grad, bool cluster, int32_t trials,
                          std::optional<uint64_t> seed, const std::string& trace_path, const std::string& svg_path,
                          const std::string& platform, const std::vector<std::string>& inputs,
                          bool trace_every_rank, const std::string& cluster_engine, int32_t threads) {
  SimOptions o;
  if (!cluster_engine.empty() && cluster_engine != "replica" && cluster_engine != "expanded")
    throw std::invalid_argument("simulate: --cluster-engine " + cluster_engine + ": expected replica or expanded");
  check_cluster_only(cluster, trace_every_rank, cluster_engine);
  o.replica_vector = cluster_engine != "expanded";
  o.threads = threads;
  o.inputs = inputs;
  const auto kind = parse_platform(platform);
  if (!kind) throw std::invalid_argument("simulate: platform '" + platform + "': " + "expected " + platform_names());
  o.platform = *kind;
  o.policies = parse_policies(reduce_grad);
  o.cluster = cluster;
  o.trials = trials;
  o.seed = seed;
  o.trace_path = trace_path;
  o.svg_path = svg_path;
  o.trace_every_rank = trace_every_rank;
  return report_json(simulate(cfg, o));
}

}  // namespace ppstream::sim
