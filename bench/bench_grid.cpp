// How long `ppstream verify --grid` takes: the whole grid (PP 1-8, VPP 1-4, microbatches up to
// 32, every transport, overlap flag, DP mode and policy), compiled, verified after every pass
// and under strict + cpu-serial. Reports configurations and instructions per second.
#include <benchmark/benchmark.h>

#include "ppstream/grid/grid.h"

namespace {

void BM_VerifyGrid(benchmark::State& state) {
  ppstream::GridOptions o;
  o.max_pp = static_cast<int32_t>(state.range(0));
  o.max_vpp = static_cast<int32_t>(state.range(1));
  o.max_microbatches = static_cast<int32_t>(state.range(2));
  ppstream::GridResult r;
  for (auto _ : state) r = ppstream::verify_grid(o);
  state.counters["configs"] = static_cast<double>(r.configs);
  state.counters["failures"] = static_cast<double>(r.failures.size());
  state.counters["configs_per_s"] =
      benchmark::Counter(static_cast<double>(r.configs), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["instrs_per_s"] =
      benchmark::Counter(static_cast<double>(r.instructions), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_VerifyGrid)->Args({4, 2, 8})->Args({8, 4, 32})->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
