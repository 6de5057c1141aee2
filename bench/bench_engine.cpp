// Engine and verifier throughput on synthetic expanded HSDP sets shaped like the lowering's
// output (1F1B, async reductions). Prints events/s and instructions/s; no pass/fail.
//
//   ./build-rel/bench_engine --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <map>

#include "../tests/cpp/engine/synthetic_1f1b.h"
#include "ppstream/engine/engine.h"
#include "ppstream/verify/verify.h"

namespace ppstream {
namespace {

// F 1 ms, B 2 ms, batch 0.5 ms, collectives 5 ms; every 97th rank arrives 3 ms late.
class BenchCost : public CostModel {
 public:
  double compute_ms(const Program&, const Instr& i) const override {
    return i.op == OpKind::F ? 1.0 : i.op == OpKind::B ? 2.0 : 0.0;
  }
  double batch_ms(const Program&, const Instr&) const override { return 0.5; }
  double collective_ms(const Program&, const Instr&) const override { return 5.0; }
  double arrival_delay_ms(const Program& p, const Instr&) const override { return p.rank.v % 97 == 0 ? 3.0 : 0.0; }
};

// pp=4, shard=8, replicate=dp/8: ranks = 4·dp.
const ProgramSet& synthetic_set(int32_t dp, int32_t microbatches) {
  static std::map<std::pair<int32_t, int32_t>, ProgramSet> cache;
  auto [it, fresh] = cache.try_emplace({dp, microbatches});
  if (fresh) {
    testing::Synthetic1F1B cfg;
    cfg.pp = 4;
    cfg.microbatches = microbatches;
    cfg.world.shard = 8;
    cfg.world.replicate = dp / 8;
    cfg.world.expanded = true;
    cfg.mode = DPMode::HSDP;
    cfg.policy = ReducePolicy::ASYNC;
    it->second = testing::make_synthetic_1f1b(cfg);
  }
  return it->second;
}

int64_t instruction_count(const ProgramSet& set) {
  int64_t n = 0;
  for (const auto& p : set.programs) n += static_cast<int64_t>(p.instrs.size());
  return n;
}

void BM_EngineAscend(benchmark::State& state) {
  const ProgramSet& set = synthetic_set(static_cast<int32_t>(state.range(0)), static_cast<int32_t>(state.range(1)));
  BenchCost cost;
  int64_t events = 0;
  double makespan = 0;
  for (auto _ : state) {
    const EngineResult r = run_engine(set, {PlatformKind::ASCEND_MINDSPORE, &cost});
    if (!r.completed) state.SkipWithError("synthetic set deadlocked");
    events += r.events_processed;
    makespan = r.makespan_ms;
  }
  state.counters["ranks"] = static_cast<double>(set.programs.size());
  state.counters["instrs"] = static_cast<double>(instruction_count(set));
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["makespan_ms"] = makespan;
}

void BM_EngineStrict(benchmark::State& state) {
  const ProgramSet& set = synthetic_set(static_cast<int32_t>(state.range(0)), static_cast<int32_t>(state.range(1)));
  int64_t events = 0;
  for (auto _ : state) {
    const EngineResult r = run_engine(set);
    events += r.events_processed;
  }
  state.counters["instrs"] = static_cast<double>(instruction_count(set));
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}

void BM_Verify(benchmark::State& state) {
  const ProgramSet& set = synthetic_set(static_cast<int32_t>(state.range(0)), static_cast<int32_t>(state.range(1)));
  const int64_t n = instruction_count(set);
  size_t violations = 0;
  for (auto _ : state) violations = verify(set).size();
  if (violations) state.SkipWithError("synthetic set has violations");
  state.counters["instrs/s"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// (dp, microbatches): 64 ranks × 8 mb, 1,024 ranks × 16 mb, 4,096 ranks × 16 mb.
BENCHMARK(BM_EngineAscend)->Args({16, 8})->Args({256, 16})->Args({1024, 16})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EngineStrict)->Args({1024, 16})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Verify)->Args({1024, 16})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ppstream

BENCHMARK_MAIN();
