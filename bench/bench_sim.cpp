// Simulator throughput: engine events per second on the seed's one-replica step, and the time
// of one step of the 16,384-rank cluster mode (PP4 x dp 4096), split into compile (lowering +
// expand-world), engine run and metrics. Run: ./build-rel/bench_sim [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <chrono>

#include "ppstream/config/config.h"
#include "ppstream/engine/engine.h"
#include "ppstream/lower/lower.h"
#include "ppstream/sim/cost_model.h"
#include "ppstream/sim/metrics.h"
#include "ppstream/sim/simulate.h"

namespace {

using namespace ppstream;

PipelineConfig seed(ReducePolicy policy) {
  PipelineConfig cfg = load_config_file(PPSTREAM_SOURCE_DIR "/examples/seed-300b-moe.yaml");
  cfg.reduce_grad = policy;
  return cfg;
}

// One engine run per iteration (timed); metrics are timed separately (paused).
void run_step(benchmark::State& state, bool expanded) {
  const PipelineConfig cfg = seed(state.range(0) == 0 ? ReducePolicy::INLINE : ReducePolicy::ASYNC);
  LowerOptions lo;
  lo.expanded = expanded;
  lo.verify_each_pass = false;
  const auto c0 = std::chrono::steady_clock::now();
  const ProgramSet set = compile(cfg, lo);
  const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
  const sim::CostSpec cost = sim::parse_cost_spec(cfg.extra_sections.at("cost"), cfg.num_stages());
  const sim::StragglerSpec strag = sim::parse_straggler_spec(cfg.extra_sections.at("straggler"), cfg.world(expanded).dp());
  int64_t events = 0, instrs = 0;
  for (const Program& p : set.programs) instrs += static_cast<int64_t>(p.instrs.size());
  double metrics_s = 0;
  for (auto _ : state) {
    sim::SimCostModel model(set, cfg, cost, sim::StragglerModel(strag, set.world));
    EngineOptions eo;
    eo.platform = PlatformKind::ASCEND_MINDSPORE;
    eo.cost = &model;
    const EngineResult r = run_engine(set, eo);
    events += r.events_processed;
    state.PauseTiming();
    const auto m0 = std::chrono::steady_clock::now();
    sim::MetricsOptions mo;
    const int32_t dp = set.world.dp();
    mo.detail = [dp](const Program& p) { return p.rank.v == p.pp_rank * dp; };
    benchmark::DoNotOptimize(sim::compute_metrics(set, r, model, mo).step_time_ms);
    metrics_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - m0).count();
    state.ResumeTiming();
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["ranks"] = static_cast<double>(set.programs.size());
  state.counters["instructions"] = static_cast<double>(instrs);
  state.counters["compile_s"] = compile_s;
  state.counters["metrics_s_per_step"] = metrics_s / static_cast<double>(state.iterations());
}

void BM_SeedOneReplica(benchmark::State& state) { run_step(state, false); }
void BM_SeedCluster16384(benchmark::State& state) { run_step(state, true); }

// The whole `ppstream simulate --cluster` path for one policy (compile, verify the replica,
// expand, engine, metrics).
void BM_SimulateClusterEndToEnd(benchmark::State& state) {
  const PipelineConfig cfg = seed(ReducePolicy::ASYNC);
  sim::SimOptions o;
  o.cluster = true;
  for (auto _ : state) benchmark::DoNotOptimize(sim::simulate(cfg, o).runs.size());
}

}  // namespace

BENCHMARK(BM_SeedOneReplica)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SeedCluster16384)->Arg(0)->Arg(1)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_SimulateClusterEndToEnd)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK_MAIN();
