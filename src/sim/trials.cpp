// CompiledPlan and the trial runner (include/ppstream/sim/trials.h): compile + verify once,
// then engine runs per straggler draw, serially or on worker threads.
#include "ppstream/sim/trials.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "engine/topology.h"
#include "ppstream/engine/tape.h"
#include "link_sharing.h"
#include "ppstream/lower/lower.h"
#include "ppstream/verify/verify.h"
#include "verify/verify_topology.h"

namespace ppstream::sim {

struct CompiledPlan::Impl {
  PipelineConfig cfg;
  ReducePolicy policy = ReducePolicy::NONE;
  bool cluster = false;
  ProgramSet set;
  engine::Topology topo;  // points at `set`: Impl lives on the heap and never moves
  size_t instructions = 0;
  // Per platform: the tape of the set (null: the recording run deadlocked, the engine runs).
  std::mutex tape_mu;
  std::map<PlatformKind, std::shared_ptr<const Tape>> tapes;
};

namespace {

// Lowers `c` into `set` and verifies the one-replica set once (the expanded world is its
// replication, too large to verify on every run); under `cluster` `set` then becomes the
// expanded world. Returns the Topology of `set`, shared by the verifier and every engine run.
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

}  // namespace

CompiledPlan::CompiledPlan(const PipelineConfig& cfg, ReducePolicy policy, bool cluster) : impl_(std::make_unique<Impl>()) {
  if (cfg.mode == DPMode::NONE && policy != ReducePolicy::NONE)
    throw ConfigError("config: simulate --reduce-grad needs data parallelism (data_parallel.mode: fsdp or hsdp); this config has none");
  impl_->cfg = cfg;
  if (policy != ReducePolicy::NONE) impl_->cfg.reduce_grad = policy;
  impl_->policy = policy;
  impl_->cluster = cluster;
  impl_->topo = compile_verified(impl_->cfg, policy, cluster, impl_->set);
  for (const Program& p : impl_->set.programs) impl_->instructions += p.instrs.size();
}

CompiledPlan::~CompiledPlan() = default;
CompiledPlan::CompiledPlan(CompiledPlan&&) noexcept = default;
CompiledPlan& CompiledPlan::operator=(CompiledPlan&&) noexcept = default;

const PipelineConfig& CompiledPlan::config() const { return impl_->cfg; }
ReducePolicy CompiledPlan::policy() const { return impl_->policy; }
bool CompiledPlan::cluster() const { return impl_->cluster; }
const World& CompiledPlan::world() const { return impl_->set.world; }
const ProgramSet& CompiledPlan::programs() const { return impl_->set; }
const engine::Topology& CompiledPlan::topology() const { return impl_->topo; }
size_t CompiledPlan::instructions() const { return impl_->instructions; }

std::shared_ptr<const Tape> CompiledPlan::tape(PlatformKind platform) const {
  const std::lock_guard<std::mutex> lock(impl_->tape_mu);
  const auto it = impl_->tapes.find(platform);
  return it == impl_->tapes.end() ? nullptr : it->second;
}

EngineResult CompiledPlan::run(const EngineOptions& opts, TrialEngine how) const {
  if (how == TrialEngine::ENGINE) return engine::run_checked(impl_->topo, opts);
  std::shared_ptr<const Tape> tape;
  {
    const std::lock_guard<std::mutex> lock(impl_->tape_mu);  // one recording per platform
    const auto it = impl_->tapes.find(opts.platform);
    if (it == impl_->tapes.end()) {
      EngineResult first;
      impl_->tapes[opts.platform] = record_tape(impl_->topo, opts, first);
      return first;
    }
    tape = it->second;
  }
  return tape ? replay_tape(*tape, opts.cost) : engine::run_checked(impl_->topo, opts);
}

namespace {

// A section reader's ConfigError ("config: cost.KEY: …") located at the key's FILE:LINE
// (PipelineConfig::extra_where); unlocated when the file does not hold the key (--set).
template <class F>
auto located(const PipelineConfig& cfg, const std::string& section, F parse) {
  try {
    return parse();
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    constexpr std::string_view kHead = "config: ";
    std::string key = section;
    if (msg.starts_with(kHead)) {
      const size_t end = msg.find(':', kHead.size());
      if (end != std::string::npos) key = msg.substr(kHead.size(), end - kHead.size());
    }
    const auto it = cfg.extra_where.find(key);
    if (it == cfg.extra_where.end() || it->second.empty()) throw;
    // As the loader's own errors: "config: FILE:LINE: cost.KEY: …".
    throw ConfigError(msg.starts_with(kHead) ? std::string(kHead) + it->second + ": " + msg.substr(kHead.size())
                                             : it->second + ": " + msg);
  }
}

}  // namespace

TrialSetup trial_setup(const PipelineConfig& cfg, const World& world) {
  TrialSetup s;
  const auto cost_it = cfg.extra_sections.find("cost");
  if (cost_it != cfg.extra_sections.end())
    s.cost = located(cfg, "cost", [&] { return parse_cost_spec(cost_it->second, cfg.num_stages()); });
  const auto strag_it = cfg.extra_sections.find("straggler");
  if (strag_it != cfg.extra_sections.end())
    s.straggler =
        located(cfg, "straggler", [&] { return parse_straggler_spec(strag_it->second, world, cfg.num_stages()); });
  return s;
}

SimCostModel trial_cost_model(const CompiledPlan& plan, const TrialSetup& setup, uint64_t trial) {
  return SimCostModel(plan.programs(), plan.config(), setup.cost, trial_straggler(plan, setup, trial));
}

StragglerModel trial_straggler(const CompiledPlan& plan, const TrialSetup& setup, uint64_t trial) {
  return StragglerModel(setup.straggler, plan.config().world(plan.cluster()), trial);
}

// StragglerModel::delay_ms reads the trial index only in its distribution's draw.
bool draws_differ(const TrialSetup& setup) { return setup.straggler.distribution != DelayDistribution::NONE; }

[[noreturn]] void throw_step_overflow(ReducePolicy policy, double step_ms, const SimCostModel& model) {
  // A straggler tail larger than every cost figure made it (delay_ms: 1.0e308): name the tail.
  const std::vector<StragglerTail>& tails = model.straggler().spec().tails;
  const auto tail = std::max_element(tails.begin(), tails.end(),
                                     [](const StragglerTail& a, const StragglerTail& b) { return a.delay_ms < b.delay_ms; });
  if (tail != tails.end() && tail->delay_ms > model.largest_figure().ms)
    throw std::invalid_argument(fmt::format("simulate: {} step time is {} ms: the delays add up beyond a double (the "
                                            "largest: straggler.tails[{}].delay_ms = {} ms); expected delays whose step "
                                            "stays finite",
                                            to_string(policy), step_ms, tail - tails.begin(), tail->delay_ms));
  const LargestFigure& big = model.largest_figure();
  throw CostOverflow(fmt::format("simulate: {} step time is {} ms: the cost section's times add up beyond a double "
                                 "(the largest: {} = {} ms, from {} = {}); expected costs whose step stays finite",
                                 to_string(policy), step_ms, big.what, big.ms, big.key, big.value),
                     big.key.empty() ? std::vector<std::string>{} : std::vector<std::string>{big.key});
}

EngineResult run_trial(const CompiledPlan& plan, SimCostModel& model, PlatformKind platform, double* wall_ms,
                       TrialEngine how) {
  if (platform == PlatformKind::STRICT)
    throw std::invalid_argument("simulate: platform strict is untimed (every duration is zero); use ascend-mindspore, "
                                "ascend-mindspore-one-comm-stream or cpu-serial");
  const ProgramSet& s = plan.programs();
  const ReducePolicy policy = plan.policy();
  EngineOptions eo;
  eo.platform = platform;
  eo.cost = &model;
  const auto t0 = std::chrono::steady_clock::now();
  EngineResult run = plan.run(eo, how);
  if (run.completed && model.spec().link_sharing != LinkSharing::DEDICATED) {
    model.set_extra_ms(link_extras(s, run, model));
    run = plan.run(eo, how);
  }
  if (wall_ms) *wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!run.completed)
    throw std::invalid_argument(fmt::format("simulate: {} step did not complete:\n{}", to_string(policy), format_deadlock(s, run)));
  // Each duration is finite (the engine checks), but their sum can still overflow a double.
  if (!std::isfinite(run.makespan_ms)) throw_step_overflow(policy, run.makespan_ms, model);
  return run;
}

void parallel_for(int64_t count, int32_t threads, const std::function<void(int64_t)>& work) {
  if (count <= 0) return;
  int64_t workers = threads > 0 ? threads : static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  workers = std::min(workers, count);
  std::atomic<int64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  int64_t failed_at = count;
  std::exception_ptr error;
  auto loop = [&] {
    for (int64_t k; !stop.load() && (k = next.fetch_add(1)) < count;) {
      try {
        work(k);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mu);
        if (k < failed_at) failed_at = k, error = std::current_exception();
        stop = true;
      }
    }
  };
  if (workers == 1) {
    loop();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(workers));
    for (int64_t w = 0; w < workers; ++w) pool.emplace_back(loop);
    for (std::thread& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
}

namespace {

// Step times of draws first+1 … first+count-1 (out[1..]) as replays of `tape` with the fixed
// terms of `base` (a draw changes only the arrival terms: SimCostModel::with_straggler) and each
// draw's arrivals, step time only; dedicated links (link sharing's second run needs the timings).
// Scratch buffers are reused across trials (a pool: a worker takes one per trial).
void replay_draws(const CompiledPlan& plan, const TrialSetup& setup, const Tape& tape, const SimCostModel& base,
                  uint64_t first, std::vector<double>& out, const TrialRunOptions& opts,
                  const std::function<void()>& finished) {
  const std::vector<double> fixed = tape_costs(tape, &base).fixed;
  struct Scratch {
    std::vector<double> arrival, slots;
  };
  std::mutex pool_mu;
  std::vector<std::unique_ptr<Scratch>> pool;
  parallel_for(static_cast<int64_t>(out.size()) - 1, opts.threads, [&](int64_t j) {
    const auto k = static_cast<size_t>(j + 1);
    std::unique_ptr<Scratch> s;
    {
      const std::lock_guard<std::mutex> lock(pool_mu);
      if (!pool.empty()) s = std::move(pool.back()), pool.pop_back();
    }
    if (!s) s = std::make_unique<Scratch>();
    SimCostModel model = base.with_straggler(trial_straggler(plan, setup, first + k));
    arrival_costs(tape, &model, s->arrival);
    const double ms = replay_tape(tape, fixed, s->arrival, s->slots, false).makespan_ms;
    // A step beyond a double: run_trial names the cost keys.
    out[k] = std::isfinite(ms) ? ms : run_trial(plan, model, setup.platform).makespan_ms;
    {
      const std::lock_guard<std::mutex> lock(pool_mu);
      pool.push_back(std::move(s));
    }
    finished();
  });
}

}  // namespace

TrialEngine trial_engine(const TrialSetup& setup) {
  return draws_differ(setup) || setup.cost.link_sharing != LinkSharing::DEDICATED ? TrialEngine::TAPE
                                                                                 : TrialEngine::ENGINE;
}

std::vector<double> trial_step_times(const CompiledPlan& plan, const TrialSetup& setup, uint64_t first, int32_t count,
                                     const TrialRunOptions& opts) {
  if (count < 0) throw std::invalid_argument(fmt::format("trial_step_times: count {}: expected >= 0", count));
  std::vector<double> out(static_cast<size_t>(count), 0.0);
  if (count == 0) return out;
  std::mutex mu;
  int64_t done = 0;
  const auto finished = [&] {
    if (!opts.progress) return;
    const std::lock_guard<std::mutex> lock(mu);
    opts.progress(++done, count);
  };
  const SimCostModel base = trial_cost_model(plan, setup, first);
  const bool differ = draws_differ(setup);
  if (differ && count > 1 && setup.cost.link_sharing == LinkSharing::DEDICATED) {
    SimCostModel model = base;
    out[0] = run_trial(plan, model, setup.platform).makespan_ms;  // records the tape if the plan has none
    finished();
    if (const std::shared_ptr<const Tape> tape = plan.tape(setup.platform)) {
      replay_draws(plan, setup, *tape, base, first, out, opts, finished);
      return out;
    }
    // No tape (a deadlock, which run_trial has thrown for): the engine below.
  }
  // One draw for every trial (fixed tails) and dedicated links: one engine run, no tape to record.
  const TrialEngine how = trial_engine(setup);
  parallel_for(differ ? count : 1, opts.threads, [&](int64_t k) {
    SimCostModel model = base.with_straggler(trial_straggler(plan, setup, first + static_cast<uint64_t>(k)));
    out[static_cast<size_t>(k)] = run_trial(plan, model, setup.platform, nullptr, how).makespan_ms;
    finished();
  });
  if (!differ) {
    std::fill(out.begin() + 1, out.end(), out[0]);
    for (int64_t k = 1; opts.progress && k < count; ++k) opts.progress(++done, count);
  }
  return out;
}

}  // namespace ppstream::sim
