// The reduced world of the engine evaluator (src/whatif/engine_eval.h; docs/whatif.md
// "Evaluation on the engine"): with one DP rank measured and every other ideal, the engine on
// the two-row world gives the full world's step times — on both artifact traces and a small
// generated job (DP 6), for every DP rank, with launch delays. The costs are the trace's
// durations (any non-negative values would do: the claim is about structure).
#include <gtest/gtest.h>

#include <algorithm>

#include "ppstream/analyze/megatron.h"
#include "whatif/engine_eval.h"
#include "whatif/graph.h"
#include "whatif/job.h"
#include "whatif/sim_graph.h"

namespace ppstream::whatif {
namespace {

std::string data(const std::string& name) { return std::string(PPSTREAM_SOURCE_DIR) + "/tests/data/whatif/" + name; }

// Op k on local row j: row_of(j) >= 0 → that trace row's duration (and a launch delay of
// 0.01 · (k mod 3) ms), -1 → the op's mean over every row (no delay). The transfer is another
// value than the duration (half of it plus 0.001 · (k mod 7 + 1) ms), so a cost term that takes
// one where the cost model takes the other changes the step.
template <class RowOf>
struct View {
  const Job& job;
  const std::vector<double>& mean;
  RowOf row_of;
  double dur(int32_t k, int64_t j) const {
    const int64_t r = row_of(j);
    return r >= 0 ? job.dur_ms[job.at(k, r)] : mean[static_cast<size_t>(k)];
  }
  double transfer(int32_t k, int64_t j) const { return 0.5 * dur(k, j) + 0.001 * (k % 7 + 1); }
  double delay(int32_t k, int64_t j) const { return row_of(j) >= 0 ? 0.01 * (k % 3) : 0.0; }
};
template <class RowOf>
View<RowOf> view(const Job& job, const std::vector<double>& mean, RowOf row_of) {
  return {job, mean, row_of};
}
// The same without launch delays, saying so (engine_eval.h has_no_delays): steps_ms replays it
// by the batch that has the delay terms as zero terms.
template <class RowOf>
struct NoDelayView : View<RowOf> {
  double delay(int32_t, int64_t) const { return 0.0; }
  bool no_delays() const { return true; }
};
// The same values, an even op's lanes given at once (engine_eval.h fill_lanes): the term source
// must pass each step's rows (j0, stride) and clamp them as it does the others.
template <class RowOf>
struct FillingView : NoDelayView<RowOf> {
  bool fill_lanes(ViewField f, int32_t k, int64_t j0, int64_t stride, int32_t n, double* out) const {
    if (k % 2 == 1) return false;
    for (int32_t l = 0; l < n; ++l) out[l] = view_value(*this, f, k, j0 + l * stride);
    return true;
  }
};

class ReducedWorld : public ::testing::TestWithParam<const char*> {};

TEST_P(ReducedWorld, EqualsTheFullWorldForEveryDpRank) {
  analyze::TimerTrace t;
  analyze::read_timer_trace(data(GetParam()), t);
  int32_t first = t.ops.front().step;
  for (const auto& op : t.ops) first = std::min(first, op.step);
  const Job job = build_job(t, std::pair{first, first + 1});  // 2 steps: the rule is per step
  std::vector<std::string> notes;
  const Graph g = lift_graph(job, notes);
  const EngineWorlds w = lift_worlds(job, g, notes, "test", true);
  ASSERT_GE(job.dp, 2);
  EXPECT_EQ(w.two_rows().gp.set.programs.size(), static_cast<size_t>(2 * job.pp));
  EXPECT_EQ(w.reduced != nullptr, job.dp > 2);
  std::vector<double> mean(job.ops.size(), 0.0);
  for (size_t k = 0; k < job.ops.size(); ++k) {
    for (int64_t r = 0; r < job.rows(); ++r) mean[k] += job.dur_ms[job.at(static_cast<int32_t>(k), r)];
    mean[k] /= static_cast<double>(job.rows());
  }
  const auto steps = static_cast<int32_t>(job.steps.size());
  const int32_t dp = job.dp;
  for (int32_t d = 0; d < dp; ++d) {
    const auto full = view(job, mean, [dp, d](int64_t j) { return j % dp == d ? j : int64_t{-1}; });
    const auto two = view(job, mean, [dp, d](int64_t j) { return j % 2 == 0 ? (j / 2) * dp + d : int64_t{-1}; });
    const auto on_full = w.full->steps_ms(full, steps);
    const auto on_two = w.two_rows().steps_ms(two, steps);
    const auto graph_full = simulate_graph(g, steps, dp, full).step_ms;
    for (int32_t s = 0; s < steps; ++s) {
      EXPECT_NEAR(on_two[static_cast<size_t>(s)], on_full[static_cast<size_t>(s)], 1e-9) << "DP rank " << d << ", step " << s;
      EXPECT_NEAR(on_full[static_cast<size_t>(s)], graph_full[static_cast<size_t>(s)], 1e-9) << "DP rank " << d << ", step " << s;
    }
  }
}

// The trace's first two step numbers (a step each when they are both there), lifted, and its
// full world (no reduced one); `mean` all 0 (the ideal rows' costs).
struct Lifted {
  Job job;
  Graph g;
  EngineWorlds w;
  std::vector<double> mean;
  explicit Lifted(const std::string& file) {
    analyze::TimerTrace t;
    analyze::read_timer_trace(data(file), t);
    int32_t first = t.ops.front().step;
    for (const auto& op : t.ops) first = std::min(first, op.step);
    job = build_job(t, std::pair{first, first + 1});
    std::vector<std::string> notes;
    g = lift_graph(job, notes);
    w = lift_worlds(job, g, notes, "test", false);
    mean.assign(job.ops.size(), 0.0);
  }
};

// EngineWorld::step_ms records the engine's tape on its first call and replays it on every later
// one: each replay, under another DP rank's view and another step, must be bit-equal (every
// instruction's times, the makespan) to a fresh engine run with that view's clamped costs, and
// so must steps_ms's batched replay. The view's dur, transfer and delay differ, so a term table
// that takes the wrong one for a cost kind (COMPUTE's transfer, BATCH's dur, ...) fails here.
TEST_P(ReducedWorld, TapeReplaysEqualFreshEngineRuns) {
  const Lifted lifted(GetParam());
  const Job& job = lifted.job;
  const EngineWorlds& w = lifted.w;
  const std::vector<double>& mean = lifted.mean;
  const int32_t dp = job.dp;
  // The job's steps, not a fixed 2: a trace's step numbers may have gaps (ST's first two
  // numbers hold one step), and a view read past the job's rows is out of bounds.
  const auto steps = static_cast<int32_t>(job.steps.size());
  ASSERT_GE(steps, 1);
  EXPECT_EQ(w.full->tape_bytes(), 0u);
  for (int32_t d = 0; d < dp; ++d) {
    const auto v = view(job, mean, [dp, d](int64_t j) { return j % dp == d ? j : int64_t{-1}; });
    // The batched replay (one lane per step, engine/tape_batch.h) after the first DP rank's
    // recording run: bit-equal to the fresh runs below.
    const std::vector<double> batched = d > 0 ? w.full->steps_ms(v, steps) : std::vector<double>();
    for (int32_t s = 0; s < steps; ++s) {
      EngineResult replayed;
      const double ms = w.full->step_ms(v, s, &replayed);
      EXPECT_GT(w.full->tape_bytes(), 0u);
      const NonNegative<decltype(v)> clamped{v};
      const GraphCostModel<NonNegative<decltype(v)>> cost(w.full->gp, clamped, s);
      const EngineResult fresh = engine::run_checked(w.full->topo, {PlatformKind::STRICT_TIMED, &cost});
      ASSERT_TRUE(fresh.completed);
      EXPECT_EQ(ms, fresh.makespan_ms) << "DP rank " << d << ", step " << s;
      if (d > 0) {
        EXPECT_EQ(batched[static_cast<size_t>(s)], fresh.makespan_ms) << "batched: DP rank " << d << ", step " << s;
      }
      ASSERT_EQ(replayed.timing.size(), fresh.timing.size());
      for (size_t p = 0; p < fresh.timing.size(); ++p) {
        ASSERT_EQ(replayed.timing[p].size(), fresh.timing[p].size());
        for (size_t i = 0; i < fresh.timing[p].size(); ++i) {
          const InstrTiming& a = replayed.timing[p][i];
          const InstrTiming& b = fresh.timing[p][i];
          ASSERT_TRUE(a.issue_ms == b.issue_ms && a.ready_ms == b.ready_ms && a.start_ms == b.start_ms && a.end_ms == b.end_ms)
              << "DP rank " << d << ", step " << s << ", program " << p << ", instruction " << i;
        }
      }
    }
  }
}

// A view without delays (has_no_delays) is replayed by the batch without the delay terms, and
// a view with them by the one with them, on the same world: each step bit-equal to a fresh
// engine run with that view's costs, whichever batch ran first.
TEST_P(ReducedWorld, NoDelayBatchEqualsFreshEngineRuns) {
  const Lifted l(GetParam());
  const int32_t dp = l.job.dp, steps = static_cast<int32_t>(l.job.steps.size());
  const EngineWorld& full = *l.w.full;
  for (int32_t d = 0; d < dp; ++d) {
    const auto row_of = [dp, d](int64_t j) { return j % dp == d ? j : int64_t{-1}; };
    const auto v = view(l.job, l.mean, row_of);
    const NoDelayView<decltype(row_of)> nd{{l.job, l.mean, row_of}};
    EXPECT_FALSE(has_no_delays(v));
    EXPECT_TRUE(has_no_delays(nd));
    EXPECT_TRUE(has_no_delays(NonNegative<decltype(nd)>{nd}));
    // d even: the no-delay batch first; odd: the other first.
    std::vector<double> with, without;
    if (d % 2 == 0) without = full.steps_ms(nd, steps);
    with = full.steps_ms(v, steps);
    if (d % 2 == 1) without = full.steps_ms(nd, steps);
    const FillingView<decltype(row_of)> filling{{{l.job, l.mean, row_of}}};
    EXPECT_EQ(full.steps_ms(filling, steps), without) << "fill_lanes: DP rank " << d;
    for (int32_t s = 0; s < steps; ++s) {
      const NonNegative<decltype(nd)> clamped{nd};
      const GraphCostModel<NonNegative<decltype(nd)>> cost(full.gp, clamped, s);
      const EngineResult fresh = engine::run_checked(full.topo, {PlatformKind::STRICT_TIMED, &cost});
      ASSERT_TRUE(fresh.completed);
      EXPECT_EQ(without[static_cast<size_t>(s)], fresh.makespan_ms) << "no delays: DP rank " << d << ", step " << s;
      const NonNegative<decltype(v)> clamped_v{v};
      const GraphCostModel<NonNegative<decltype(v)>> cost_v(full.gp, clamped_v, s);
      const EngineResult fresh_v = engine::run_checked(full.topo, {PlatformKind::STRICT_TIMED, &cost_v});
      EXPECT_EQ(with[static_cast<size_t>(s)], fresh_v.makespan_ms) << "delays: DP rank " << d << ", step " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Traces, ReducedWorld,
                         ::testing::Values("timeline-AR.json.gz", "timeline-ST.json.gz", "timeline-GEN6x3.json.gz"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           std::string n = p.param;
                           return n.substr(9, n.find('.') - 9);
                         });

}  // namespace
}  // namespace ppstream::whatif
