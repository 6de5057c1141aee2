// Re-simulation of the lifted graph over rows (a row = one DP rank in one step; docs/whatif.md
// "Re-simulation"): an op starts at the last end of what it depends on (its row's step start when
// nothing) plus its launch delay; a compute-like op ends after its duration; the members of a
// communication group end at the group's last start (over the step's DP ranks too for DP
// collectives) plus their own transfer time. Every row of a step is laid out contiguously.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "graph.h"

namespace ppstream::whatif {

struct SimRun {
  std::vector<double> step_ms;           // per step: last end (ms from the step start)
  std::vector<double> start_ms, end_ms;  // [op · rows + row], kept when asked for
};

// The per-op times of an evaluation, reused across evaluations (`simulate_graph` writes every
// entry it reads before reading it: every op and group is in the graph's order), so no call
// allocates or zero-fills its ops × rows buffers again. Grows to the largest call's size.
struct SimScratch {
  std::vector<double> start, end, join;
  static void fit(std::vector<double>& v, size_t n) {
    if (v.size() < n) v.resize(n);
  }
};

// `cost` provides dur(k, j), transfer(k, j), delay(k, j) for op k on local row j (j = step ·
// rows_per_step + i). Deterministic; O(ops · rows) per call. `scratch`: the buffers to reuse
// (none: fresh ones); with `keep_times` the run's times are moved out of it into the result.
template <class Cost>
SimRun simulate_graph(const Graph& g, int32_t steps, int32_t rows_per_step, const Cost& cost, bool keep_times = false,
                      SimScratch* scratch = nullptr) {
  const auto K = static_cast<int64_t>(g.deps.size());
  const int64_t J = int64_t{steps} * rows_per_step;
  SimScratch own;
  SimScratch& buf = scratch ? *scratch : own;
  SimScratch::fit(buf.start, static_cast<size_t>(K * J));
  SimScratch::fit(buf.end, static_cast<size_t>(K * J));
  SimScratch::fit(buf.join, static_cast<size_t>(J));
  std::vector<double>& start = buf.start;
  std::vector<double>& end = buf.end;
  std::vector<double>& join = buf.join;
  for (int32_t n : g.order) {
    if (n >= 0) {
      const int64_t k = n;
      const auto& deps = g.deps[static_cast<size_t>(k)];
      const bool comm = g.group[static_cast<size_t>(k)] >= 0;
      double* s = start.data() + k * J;
      double* e = end.data() + k * J;
      for (int64_t j = 0; j < J; ++j) {
        double t = 0;
        for (int32_t u : deps) t = std::max(t, end[static_cast<size_t>(u * J + j)]);
        s[j] = t + cost.delay(static_cast<int32_t>(k), j);
        if (!comm) e[j] = s[j] + cost.dur(static_cast<int32_t>(k), j);
      }
    } else {
      const CommGroup& grp = g.groups[static_cast<size_t>(-n - 1)];
      std::fill(join.begin(), join.begin() + J, -1e300);
      for (int32_t m : grp.members) {
        const double* s = start.data() + int64_t{m} * J;
        for (int64_t j = 0; j < J; ++j) join[static_cast<size_t>(j)] = std::max(join[static_cast<size_t>(j)], s[j]);
      }
      if (grp.dp_sync && rows_per_step > 1) {
        for (int64_t s0 = 0; s0 < J; s0 += rows_per_step) {
          const double mx = *std::max_element(join.begin() + s0, join.begin() + s0 + rows_per_step);
          std::fill(join.begin() + s0, join.begin() + s0 + rows_per_step, mx);
        }
      }
      for (int32_t m : grp.members) {
        double* e = end.data() + int64_t{m} * J;
        for (int64_t j = 0; j < J; ++j) e[j] = join[static_cast<size_t>(j)] + cost.transfer(m, j);
      }
    }
  }
  SimRun run;
  run.step_ms.assign(static_cast<size_t>(steps), 0.0);
  for (int64_t k = 0; k < K; ++k) {
    const double* e = end.data() + k * J;
    for (int64_t j = 0; j < J; ++j) {
      double& st = run.step_ms[static_cast<size_t>(j / rows_per_step)];
      st = std::max(st, e[j]);
    }
  }
  if (keep_times) {
    run.start_ms.assign(start.begin(), start.begin() + K * J);
    run.end_ms.assign(end.begin(), end.begin() + K * J);
  }
  return run;
}

}  // namespace ppstream::whatif
