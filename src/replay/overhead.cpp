// Replay's runtime overhead figures from one measured step (see overhead.h).
#include "replay/overhead.h"

#include <algorithm>
#include <functional>
#include <vector>

namespace ppstream::replay {
namespace {

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}
// E[(x − mean)+] over v: the mean of max(0, x − m).
double excess_over(const std::vector<double>& v, double m) {
  double s = 0;
  for (double x : v) s += std::max(0.0, x - m);
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}
double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

}  // namespace

double self_consistent_floor(std::vector<double> x, double tolerance) {
  if (x.empty()) return 0.0;
  for (double& v : x) v = std::max(0.0, v);
  std::sort(x.begin(), x.end(), std::greater<>());
  const auto n = static_cast<double>(x.size());
  // With the c largest values above m (x[0..c)), E[(X − m)+] = (top − c·m) / n on m in
  // [x[c], x[c−1]]: walk the segments downwards while g(m) = E[(X − m)+] − tolerance·m is <= 0 at
  // the segment's lower end; the root is in the first segment where it is not.
  double top = 0;  // sum of x[0..c)
  for (size_t c = 0; c <= x.size(); ++c) {
    const double lo = c < x.size() ? x[c] : 0.0;
    const double g = (top - static_cast<double>(c) * lo) / n - tolerance * lo;
    if (g > 0) return top / (static_cast<double>(c) + n * tolerance);
    if (c < x.size()) top += x[c];
  }
  return 0.0;  // every time 0
}

RuntimeOverhead overhead_of(const ProgramSet& set, const EngineResult& run, const CostModel& transfers) {
  RuntimeOverhead o;
  o.step_ms = run.makespan_ms;
  const World& w = set.world;
  std::vector<double> per_rank_h, p2p, coll;
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    if (prog.instrs.empty()) continue;
    o.longest_program = std::max(o.longest_program, static_cast<int64_t>(prog.instrs.size()));
    per_rank_h.push_back(run.timing[p].back().issue_ms / static_cast<double>(prog.instrs.size()));
    for (const Instr& in : prog.instrs) {
      if (in.op == OpKind::BATCH) {
        p2p.push_back(transfers.batch_ms(prog, in));
      } else if (in.op == OpKind::UNSHARD || in.op == OpKind::REDUCE_GRAD) {
        const int32_t steps = (w.shard - 1) + (in.op == OpKind::REDUCE_GRAD ? 2 * (w.replicate - 1) : 0);
        if (steps > 0) coll.push_back(transfers.collective_ms(prog, in) / steps);
      }
    }
  }
  o.host_issue_ms = median(per_rank_h);
  o.p2p_mean_ms = mean(p2p);
  o.p2p_median_ms = median(p2p);
  o.p2p_excess_ms = excess_over(p2p, o.p2p_mean_ms);
  o.p2p_floor_ms = self_consistent_floor(p2p, kFloorTolerance);
  o.p2p_floor_excess_ms = excess_over(p2p, o.p2p_floor_ms);
  o.batches = static_cast<int64_t>(p2p.size());
  o.collective_step_mean_ms = mean(coll);
  o.collective_step_median_ms = median(coll);
  o.collective_step_excess_ms = excess_over(coll, o.collective_step_mean_ms);
  o.collective_step_floor_ms = self_consistent_floor(coll, kFloorTolerance);
  o.collective_step_floor_excess_ms = excess_over(coll, o.collective_step_floor_ms);
  o.collectives = static_cast<int64_t>(coll.size());
  return o;
}

}  // namespace ppstream::replay
