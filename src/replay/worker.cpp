// One replay process (inside mpirun/srun): initialise MPI at MPI_THREAD_FUNNELED (this thread
// owns every MPI call), build the verified world, split the shard / replicate communicators
// with the engine's group ids, run each step on the emulated device from a common start time,
// gather every rank's timings on rank 0 and report measured against simulated.
#include <fmt/format.h>
#include <mpi.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>

#include "ppstream/analyze/trace_writer.h"
#include "ppstream/lower/lower.h"
#include "ppstream/sim/memory.h"
#include "ppstream/replay/replay.h"
#include "ppstream/sim/trace.h"
#include "ppstream/verify/verify.h"
#include "replay/clock.h"
#include "replay/device.h"
#include "replay/measure.h"
#include "replay/overhead.h"
#include "replay/plan.h"

namespace ppstream::replay {
namespace {

constexpr double kStartLeadMs = 100;  // rank 0 announces each step's start this far ahead
constexpr int kTimeoutExit = 124;

sim::CostSpec cost_of(const PipelineConfig& cfg) {
  const auto it = cfg.extra_sections.find("cost");
  return it == cfg.extra_sections.end() ? sim::CostSpec{} : sim::parse_cost_spec(it->second, cfg.num_stages());
}
sim::StragglerSpec straggler_of(const PipelineConfig& cfg, const World& w) {
  const auto it = cfg.extra_sections.find("straggler");
  return it == cfg.extra_sections.end() ? sim::StragglerSpec{} : sim::parse_straggler_spec(it->second, w, cfg.num_stages());
}

// A common step start: rank 0's clock + lead, broadcast (one host shares CLOCK_REALTIME).
double common_start() {
  double t = now_ms() + kStartLeadMs;
  MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return t;
}

// Every rank's timings of one step, on rank 0 (others get an empty vector).
std::vector<std::vector<InstrTiming>> gather_timings(const ProgramSet& set, int me, const std::vector<InstrTiming>& mine) {
  std::vector<double> flat;
  for (const InstrTiming& t : mine) flat.insert(flat.end(), {t.issue_ms, t.ready_ms, t.start_ms, t.end_ms});
  const auto n = static_cast<int>(set.programs.size());
  std::vector<int> counts(static_cast<size_t>(n)), displs(static_cast<size_t>(n));
  int total = 0;
  for (int p = 0; p < n; ++p) {
    counts[static_cast<size_t>(p)] = static_cast<int>(set.programs[static_cast<size_t>(p)].instrs.size()) * 4;
    displs[static_cast<size_t>(p)] = total;
    total += counts[static_cast<size_t>(p)];
  }
  std::vector<double> all(me == 0 ? static_cast<size_t>(total) : 0);
  MPI_Gatherv(flat.data(), static_cast<int>(flat.size()), MPI_DOUBLE, all.data(), counts.data(), displs.data(),
              MPI_DOUBLE, 0, MPI_COMM_WORLD);
  std::vector<std::vector<InstrTiming>> out;
  if (me != 0) return out;
  for (int p = 0; p < n; ++p) {
    std::vector<InstrTiming> v(set.programs[static_cast<size_t>(p)].instrs.size());
    for (size_t k = 0; k < v.size(); ++k) {
      const double* d = &all[static_cast<size_t>(displs[static_cast<size_t>(p)]) + 4 * k];
      v[k] = {d[0], d[1], d[2], d[3]};
    }
    out.push_back(std::move(v));
  }
  return out;
}

// One measured step of this rank: its common start, its length (the slowest rank's last end;
// rank 0 only) and this rank's timings from that start.
struct StepRecord {
  double t0_ms = 0;
  double step_ms = 0;
  std::vector<InstrTiming> timing;
};

// One trace file per rank: every step's slices at the step's offset from the first start, with
// a step marker (trace_format.h: args.kind "step") spanning the step's length, so `ppstream
// analyze` reports per-step figures.
// Beside the traces, DIR/replay.POLICY.config.yaml: the configuration that ran (what `ppstream
// whatif DIR` compiles again); collective slices carry the arrival delay the device applied.
void write_traces(const std::string& dir, ReducePolicy policy, const ProgramSet& set,
                  const std::vector<StepRecord>& steps, const std::vector<EngineResult>& runs,
                  const PipelineConfig& cfg, const CostModel& model) {
  {
    const std::string path = fmt::format("{}/replay.{}.config.yaml", dir, to_string(policy));
    std::ofstream f(path);
    if (!f || !(f << to_yaml(cfg))) throw std::invalid_argument("replay: cannot write " + path);
  }
  for (const Program& p : set.programs) {
    const std::string path = fmt::format("{}/replay.{}.rank{}.json", dir, to_string(policy), p.rank.v);
    std::ofstream f(path);
    if (!f) throw std::invalid_argument("replay: cannot write " + path);
    const Rank r = p.rank;
    analyze::TraceWriter w("replay", true);
    for (size_t k = 0; k < steps.size(); ++k) {
      const double offset = steps[k].t0_ms - steps.front().t0_ms;
      w.step(r, static_cast<int64_t>(k), offset * 1000, steps[k].step_ms * 1000);
      sim::add_trace_slices(w, set, runs[k], [r](const Program& q) { return q.rank == r; }, offset, &model);
    }
    w.write(f);
  }
}

// Sums every rank's check counts on rank 0.
CheckCounts total_checks(const CheckCounts& mine) {
  int64_t in[4] = {mine.p2p_receives, mine.reductions, mine.unshards, mine.failed}, out[4] = {0, 0, 0, 0};
  MPI_Reduce(in, out, 4, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  return {out[0], out[1], out[2], out[3]};
}

struct PolicyOutcome {
  bool ok = true;
  double gemm_ms = 0;                 // GEMM mode: one multiply on rank 0
  CheckCounts checks;                 // rank 0: summed over ranks and steps
  std::optional<sim::PolicyRun> run;  // rank 0
  std::optional<EngineResult> median;  // rank 0: the median step's measured run (every rank)
};

// Runs one step on the device from a common start; exits the process on a hang (after the
// report). Adds the step's checks to `checks`; rank 0 learns the step time.
StepRecord run_one_step(Device& device, Progress& progress, const ReplayOptions& opts, ReducePolicy policy, int32_t step,
                        int me, CheckCounts& checks) {
  const double t0 = common_start();
  progress.reset_sequences();
  StepResult r = device.run_step(step, t0, t0 + opts.timeout_s * 1000);
  if (!r.completed) {
    std::cerr << fmt::format("replay: {} step {} timed out after {} s on r{}\n{}", to_string(policy), step,
                             opts.timeout_s, me, r.hang_report)
              << std::flush;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let the other ranks report too
    std::_Exit(kTimeoutExit);
  }
  for (const std::string& e : r.errors) std::cerr << "replay: check failed: " << e << "\n";
  checks.p2p_receives += r.checks.p2p_receives;
  checks.reductions += r.checks.reductions;
  checks.unshards += r.checks.unshards;
  checks.failed += r.checks.failed;
  double end = 0, step_ms = 0;
  for (const InstrTiming& t : r.timing) end = std::max(end, t.end_ms);
  MPI_Reduce(&end, &step_ms, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return {t0, step_ms, std::move(r.timing)};
}

// The median step by step time (the lower middle for an even count).
size_t median_step(const std::vector<StepRecord>& steps) {
  std::vector<size_t> order(steps.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return steps[a].step_ms < steps[b].step_ms; });
  return order[(order.size() - 1) / 2];
}

// Rank 0: the measured figures of the median step (the lower middle for an even count), so a
// step stalled by the machine's load, or the first one's warm-up, is not what is reported;
// every step's time goes into trials.
// The memory model (sim/memory.h) runs on the measured timings: the median step's report, the
// peak over every step (as simulate's is over every trial).
sim::PolicyRun median_step_run(const ProgramSet& set, const PipelineConfig& cfg, ReducePolicy policy,
                               const std::vector<StepRecord>& steps, const std::vector<EngineResult>& runs,
                               const sim::SimCostModel& model, const sim::CostSpec& cost) {
  std::vector<double> step_times;
  for (const StepRecord& st : steps) step_times.push_back(st.step_ms);
  const size_t median = median_step(steps);
  sim::PolicyRun pr = measured_policy_run(set, policy, runs[median], model, step_times);
  const auto cost_it = cfg.extra_sections.find("cost");
  const sim::MemorySpec spec =
      sim::parse_memory_spec(cost_it == cfg.extra_sections.end() ? std::string() : cost_it->second, cost);
  pr.memory = sim::compute_memory(set, runs[median], cfg.stage_layers, spec);
  pr.peak_memory_bytes = pr.memory.peak_bytes;
  for (size_t k = 0; k < runs.size(); ++k)
    if (k != median)
      pr.peak_memory_bytes =
          std::max(pr.peak_memory_bytes, sim::compute_memory(set, runs[k], cfg.stage_layers, spec).peak_bytes);
  return pr;
}

// Runs every step of one policy on this rank, then gathers the timings on rank 0.
PolicyOutcome run_policy(const PipelineConfig& cfg, const ReplayOptions& opts, ReducePolicy policy, int me) {
  const ProgramSet set = verified_world(cfg, policy);
  const sim::CostSpec cost = cost_of(cfg);
  PipelineConfig c = cfg;
  if (policy != ReducePolicy::NONE) c.reduce_grad = policy;
  const sim::SimCostModel model(set, c, cost, sim::StragglerModel(straggler_of(cfg, set.world), set.world, 0));
  const RankPlan plan = make_plan(set, static_cast<size_t>(me), c, cost, opts.max_buffer_bytes);
  std::array<MPI_Comm, 3> p2p_comm;
  MPI_Comm shard_comm, repl_comm;
  for (MPI_Comm& comm : p2p_comm) MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_split(MPI_COMM_WORLD, plan.group_color[0], me, &shard_comm);
  MPI_Comm_split(MPI_COMM_WORLD, plan.group_color[1], me, &repl_comm);
  Progress progress(p2p_comm, {shard_comm, repl_comm}, opts.poll_us);
  Device device(set, plan, model, progress, opts);
  PolicyOutcome out;
  out.gemm_ms = device.gemm_ms();
  CheckCounts mine;
  std::vector<StepRecord> steps;
  for (int32_t step = 0; step < opts.steps; ++step)
    steps.push_back(run_one_step(device, progress, opts, policy, step, me, mine));
  out.checks = total_checks(mine);
  out.ok = me != 0 || out.checks.failed == 0;
  std::vector<EngineResult> runs;  // rank 0: every step, every rank
  for (const StepRecord& st : steps) {
    auto timings = gather_timings(set, me, st.timing);
    if (me == 0) runs.push_back(measured_run(set, std::move(timings)));
  }
  for (MPI_Comm& comm : p2p_comm) MPI_Comm_free(&comm);
  MPI_Comm_free(&shard_comm);
  MPI_Comm_free(&repl_comm);
  if (me == 0) {
    out.run = median_step_run(set, cfg, policy, steps, runs, model, cost);
    out.median = runs[median_step(steps)];
    if (!opts.trace_dir.empty())
      write_traces(policy_trace_dir(opts.trace_dir, policy, std::max<size_t>(1, opts.policies.size())), policy, set, steps,
                   runs, c, model);
  }
  return out;
}

// Settings, and per policy the exact checks made (summed over ranks and steps).
std::string settings_json(const ReplayOptions& o, int np, const std::vector<ReducePolicy>& policies,
                          const std::vector<CheckCounts>& checks, double gemm_ms) {
  std::string per;
  for (size_t n = 0; n < policies.size() && n < checks.size(); ++n)
    per += fmt::format(R"({}"{}":{{"p2p_receives":{},"reductions":{},"unshards":{},"failed":{}}})", n ? "," : "",
                       to_string(policies[n]), checks[n].p2p_receives, checks[n].reductions, checks[n].unshards,
                       checks[n].failed);
  const std::string compute = o.compute == ComputeMode::GEMM
                                  ? fmt::format(R"({{"mode":"gemm","gemm_n":{},"gemm_ms":{}}})", o.gemm_n, gemm_ms)
                                  : std::string(R"({"mode":"sleep"})");
  return fmt::format(R"({{"processes":{},"steps":{},"max_buffer_bytes":{},"comm_time":"{}","poll_us":{},"issue":"{}","mpi_thread":"funneled","clock":"CLOCK_REALTIME","compute":{},"checks":{{{}}}}})",
                     np, o.steps, o.max_buffer_bytes, o.comm_time == CommTime::MODEL ? "model" : "real", o.poll_us,
                     o.issue_ahead ? "ahead" : "in-step", compute, per);
}

}  // namespace

RuntimeOverhead runtime_overhead(const PipelineConfig& cfg, int me, int32_t steps) {
  PipelineConfig quiet = cfg;
  quiet.extra_sections.erase("straggler");
  apply_overrides(quiet, {{"cost.p2p_latency_ms", "0"}, {"cost.p2p_bandwidth_gb_per_s", "0"},
                          {"cost.collective_alpha_ms", "0"}, {"cost.shard_bandwidth_gb_per_s", "0"},
                          {"cost.replicate_bandwidth_gb_per_s", "0"}, {"cost.host_issue_ms", "0"}});
  const ReducePolicy policy = cfg.mode == DPMode::NONE ? ReducePolicy::NONE : cfg.reduce_grad;
  ReplayOptions opts;
  opts.steps = steps;
  const PolicyOutcome o = run_policy(quiet, opts, policy, me);
  RuntimeOverhead out;
  if (me == 0) {
    const ProgramSet set = verified_world(quiet, policy);
    const sim::CostSpec cost = cost_of(quiet);
    const sim::SimCostModel model(set, quiet, cost, sim::StragglerModel(sim::StragglerSpec{}, set.world, 0));
    out = overhead_of(set, *o.median, MeasuredCost(set, *o.median, model));
  }
  out.policy = policy;
  return out;
}

void require_verified(const ProgramSet& set, const std::string& what) {
  ppstream::require_verified(set, {}, fmt::format("replay: the {} programs do not verify; refusing to run them", what));
}

ProgramSet verified_world(const PipelineConfig& cfg, ReducePolicy policy) {
  PipelineConfig c = cfg;
  if (policy != ReducePolicy::NONE) c.reduce_grad = policy;
  LowerOptions once;
  once.verify_each_pass = false;
  require_verified(compile(c, once), to_string(policy));
  LowerOptions lo;
  lo.expanded = true;
  lo.verify_each_pass = false;
  return compile(c, lo);
}

bool under_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_PROCID"})
    if (std::getenv(v)) return true;
  return false;
}

int run_worker(const PipelineConfig& cfg, const ReplayOptions& opts) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // the launcher (mpirun) dies → this worker dies
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  int me = 0, np = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  std::vector<ReducePolicy> policies = opts.policies;
  if (policies.empty()) policies = {cfg.mode == DPMode::NONE ? ReducePolicy::NONE : cfg.reduce_grad};
  const World world = cfg.world(true);
  const int64_t want = int64_t{world.pp} * world.dp();
  if (provided < MPI_THREAD_FUNNELED || np != want) {
    if (me == 0)
      std::cerr << (np != want ? fmt::format("replay: the config's world has {} ranks (pp {} x dp {}); got {} processes; "
                                             "run with -np {}\n", want, world.pp, world.dp(), np, want)
                               : "replay: MPI does not provide MPI_THREAD_FUNNELED\n");
    MPI_Finalize();
    return 2;
  }
  bool ok = true;
  std::vector<sim::PolicyRun> runs;
  std::vector<CheckCounts> checks;
  double gemm_ms = 0;
  for (ReducePolicy policy : policies) {
    PolicyOutcome o = run_policy(cfg, opts, policy, me);
    ok = ok && o.ok;
    gemm_ms = o.gemm_ms;
    checks.push_back(o.checks);
    if (o.run) runs.push_back(std::move(*o.run));
  }
  if (me == 0) {
    sim::SimOptions so;
    so.policies = policies;
    so.cluster = true;
    const sim::SimReport simulated = sim::simulate(cfg, so);
    sim::SimReport measured = simulated;
    measured.runs = std::move(runs);
    std::string text = opts.json ? replay_json(measured, simulated, settings_json(opts, np, policies, checks, gemm_ms)) + "\n"
                                 : replay_table(measured, simulated);
    if (!opts.json)
      for (size_t n = 0; n < policies.size(); ++n)
        text += fmt::format("{}: checked exactly over {} step(s): {} P2P receives, {} reductions, {} unshards; {} failed\n",
                            to_string(policies[n]), opts.steps, checks[n].p2p_receives, checks[n].reductions,
                            checks[n].unshards, checks[n].failed);
    std::cout << text << std::flush;
    if (!ok) std::cerr << "replay: FAILED: a transfer or reduction did not hold the expected values (see above)\n";
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}

}  // namespace ppstream::replay
