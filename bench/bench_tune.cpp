// Plan search speed on the seed with a lognormal reduction tail (examples/seed-300b-moe-tail.yaml):
// distinct plans evaluated per second, simulate runs per second, the time to the best plan
// (docs/tune.md "Figures") and the search's wall time, at --trials 200 with a 60 s budget, beside
// the best plan's p99 and the best baseline's. One search per iteration.
// Run: ./build-rel/bench_tune [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>

#include "ppstream/config/config.h"
#include "ppstream/tune/tune.h"

namespace {

using namespace ppstream;

void search(benchmark::State& state) {
  const PipelineConfig cfg = load_config_file(PPSTREAM_SOURCE_DIR "/examples/seed-300b-moe-tail.yaml");
  tune::TuneOptions o;
  o.trials = static_cast<int32_t>(state.range(0));
  o.budget_s = 60;
  tune::TuneReport r;
  for (auto _ : state) r = tune::tune(cfg, o);
  double best_base = 0;
  for (const tune::PlanResult& b : r.baselines) best_base = best_base == 0 ? b.score_ms : std::min(best_base, b.score_ms);
  state.counters["plans_evaluated"] = static_cast<double>(r.evaluated);
  state.counters["plans_per_s"] = static_cast<double>(r.evaluated) / r.wall_s;
  state.counters["simulations_per_s"] = static_cast<double>(r.simulations) / r.wall_s;
  state.counters["time_to_best_s"] = r.time_to_best_s;
  state.counters["wall_s"] = r.wall_s;
  state.counters["stopped_by_budget"] = r.stopped_by_budget ? 1 : 0;
  state.counters["best_p99_ms"] = r.plans.empty() ? 0 : r.plans.front().p99_ms;
  state.counters["best_baseline_p99_ms"] = best_base;
  // The same figures plainly (Google Benchmark's table prints 5995.75 as 5.99575k), as
  // docs/tune.md "Figures" quotes them.
  std::printf("bench_tune trials=%d: plans_evaluated=%lld plans_per_s=%.2f simulations_per_s=%.2f time_to_best_s=%.1f "
              "wall_s=%.1f stopped_by_budget=%d best_p99_ms=%.3f best_baseline_p99_ms=%.3f\n",
              o.trials, static_cast<long long>(r.evaluated), static_cast<double>(r.evaluated) / r.wall_s,
              static_cast<double>(r.simulations) / r.wall_s, r.time_to_best_s, r.wall_s, r.stopped_by_budget ? 1 : 0,
              r.plans.empty() ? 0 : r.plans.front().p99_ms, best_base);
}
BENCHMARK(search)->Arg(200)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
