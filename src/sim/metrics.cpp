#include "ppstream/program/deps.h"
#include "ppstream/sim/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <stdexcept>

#include "ppstream/program/format.h"
#include "ppstream/program/intervals.h"

namespace ppstream::sim {
namespace {

constexpr double kEps = 1e-6;  // ms; engine times are sums of the same doubles

bool is_collective(OpKind k) { return k == OpKind::REDUCE_GRAD || k == OpKind::UNSHARD; }
// Compute work on a compute stream (what the analyzer counts as compute too).
bool is_work(OpKind k) { return is_compute(k) || k == OpKind::OPT_STEP; }

WaitKind kind_of(OpKind k) {
  switch (k) {
    case OpKind::BATCH: return WaitKind::P2P;
    case OpKind::REDUCE_GRAD: return WaitKind::REDUCE;
    case OpKind::UNSHARD: return WaitKind::UNSHARD;
    case OpKind::F:
    case OpKind::B:
    case OpKind::I:
    case OpKind::W:
    case OpKind::OPT_STEP: return WaitKind::COMPUTE;
    default: return WaitKind::OTHER;
  }
}

// a: disjoint, sorted (one FIFO stream); b may overlap itself (several reduce streams): merge.
double intersection(const IntervalList<double>& a, IntervalList<double> b) {
  return intersection_length(a, merge_intervals(std::move(b)));
}

// Per-program lookups the critical-path walk and the wait attribution need, built once in
// O(n log n) so that the walk is linear in the path (was a scan of the program per step).
struct ProgramIndex {
  std::vector<int32_t> prev_on_stream;                   // previous instruction on the same stream, or -1
  std::unordered_map<std::string_view, size_t> record;   // event → first RECORD
  std::vector<std::pair<P2POp, size_t>> batch_of_op;     // (op, BATCH holding it), sorted

  explicit ProgramIndex(const Program& prog) {
    prev_on_stream.assign(prog.instrs.size(), -1);
    std::unordered_map<std::string_view, int32_t> last;
    record.reserve(prog.instrs.size() / 4);
    decltype(last)::value_type* run = nullptr;  // the previous instruction's stream entry
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      if (run && run->first == i.stream) {  // a run on one stream: no hash lookup
        prev_on_stream[k] = std::exchange(run->second, static_cast<int32_t>(k));
      } else {
        auto [it, fresh] = last.emplace(i.stream, static_cast<int32_t>(k));
        if (!fresh) prev_on_stream[k] = std::exchange(it->second, static_cast<int32_t>(k));
        run = &*it;
      }
      if (i.op == OpKind::RECORD) record.emplace(i.event, k);
      for (const P2POp& op : i.p2p) batch_of_op.emplace_back(op, k);
    }
    std::stable_sort(batch_of_op.begin(), batch_of_op.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
  }
  std::optional<size_t> prev(size_t k) const {
    return prev_on_stream[k] < 0 ? std::nullopt : std::optional<size_t>(static_cast<size_t>(prev_on_stream[k]));
  }
  std::optional<size_t> record_of(const std::string& event) const {
    auto it = record.find(event);
    return it == record.end() ? std::nullopt : std::optional<size_t>(it->second);
  }
  // The instruction whose completion a RECORD marks: the last non-RECORD/RESHARD before it on
  // its stream (RESHARD is free and follows its REDUCE_GRAD).
  std::optional<size_t> recorded_work(const Program& p, size_t record_k) const {
    for (auto k = prev(record_k); k; k = prev(*k)) {
      const OpKind op = p.instrs[*k].op;
      if (op != OpKind::RECORD && op != OpKind::RESHARD) return k;
    }
    return std::nullopt;
  }
};

std::vector<ProgramIndex> index_programs(const ProgramSet& set) {
  std::vector<ProgramIndex> out;
  out.reserve(set.programs.size());
  for (const Program& p : set.programs) out.emplace_back(p);
  return out;
}

struct Walker {
  const ProgramSet& set;
  const EngineResult& run;
  const CostModel& cost;
  const std::vector<ProgramIndex>& index;

  const InstrTiming& t(size_t p, size_t k) const { return run.timing[p][k]; }

  // The peer batch holding the mirror of one of this batch's ops that was posted at `matched`.
  std::optional<std::pair<size_t, size_t>> mirror_batch(size_t p, size_t k, double matched) const {
    const Program& prog = set.programs[p];
    for (const P2POp& op : prog.instrs[k].p2p) {
      const size_t q = program_index(set, op.peer);
      const P2POp want = mirror_of(op, prog.rank);
      const auto& ops = index[q].batch_of_op;
      auto it = std::lower_bound(ops.begin(), ops.end(), want, [](const auto& x, const P2POp& w) { return x.first < w; });
      for (; it != ops.end() && it->first == want; ++it)
        if (std::abs(t(q, it->second).start_ms - matched) < kEps) return std::pair{q, it->second};
    }
    return std::nullopt;
  }

  std::vector<CriticalStep> walk() const {
    // Start from the instruction that ends last (ties: lowest program, then index).
    size_t p = 0, k = 0;
    double best = -1;
    for (size_t a = 0; a < set.programs.size(); ++a)
      for (size_t b = 0; b < set.programs[a].instrs.size(); ++b)
        if (t(a, b).end_ms > best + kEps) best = t(a, b).end_ms, p = a, k = b;
    std::vector<CriticalStep> path;
    size_t total = 0;  // each step moves to an instruction that ends no later: at most one visit each
    for (const Program& q : set.programs) total += q.instrs.size();
    for (size_t guard = 0; guard <= total; ++guard) {
      const Program& prog = set.programs[p];
      const Instr& i = prog.instrs[k];
      const InstrTiming& ti = t(p, k);
      CriticalStep step{prog.rank, i.stream, static_cast<int32_t>(k), to_text(i), ti.start_ms, ti.end_ms, ""};
      // Where the wait before this instruction's completion came from.
      std::optional<std::pair<size_t, size_t>> next;
      std::string straggler;
      if (i.op == OpKind::BATCH) {
        const double matched = ti.end_ms - cost.batch_ms(prog, i);
        if (matched > ti.start_ms + kEps) {
          next = mirror_batch(p, k, matched);
          if (next) step.via = fmt::format("p2p match with r{}", set.programs[next->first].rank.v);
        }
      } else if (is_collective(i.op)) {
        // A late member is a cause the path cannot follow out of the set (or, expanded, one
        // of thousands): name the lateness and keep walking from the collective's own start.
        const double late = ti.end_ms - cost.collective_ms(prog, i) - ti.start_ms;
        if (late > kEps) straggler = fmt::format("; slowest member {:.3f} ms late", late);
      } else if (i.op == OpKind::WAIT && ti.start_ms > ti.ready_ms + kEps) {
        if (auto rec = index[p].record_of(i.event)) {
          next = std::pair{p, *rec};
          step.via = "event " + i.event;
        }
      }
      if (!next) {
        const auto prev = index[p].prev(k);
        if (prev && std::abs(t(p, *prev).end_ms - ti.ready_ms) < kEps && ti.ready_ms > kEps) {
          next = std::pair{p, *prev};
          step.via = "stream order";
        }
      }
      step.via += straggler;
      path.push_back(step);
      if (!next) break;
      std::tie(p, k) = *next;
    }
    std::reverse(path.begin(), path.end());
    return path;
  }
};

}  // namespace

const char* to_string(WaitKind k) {
  switch (k) {
    case WaitKind::P2P: return "p2p";
    case WaitKind::REDUCE: return "reduce";
    case WaitKind::UNSHARD: return "unshard";
    case WaitKind::COMPUTE: return "compute";
    case WaitKind::OTHER: return "other";
  }
  return "?";
}

size_t program_index(const ProgramSet& set, Rank rank) {
  auto it = std::lower_bound(set.programs.begin(), set.programs.end(), rank,
                             [](const Program& p, Rank r) { return p.rank < r; });
  if (it == set.programs.end() || it->rank != rank)
    throw std::invalid_argument(fmt::format("simulate: rank r{} is not in the program set", rank.v));
  return static_cast<size_t>(it - set.programs.begin());
}

SimMetrics compute_metrics(const ProgramSet& set, const EngineResult& run, const CostModel& cost,
                           const MetricsOptions& opts) {
  if (!run.completed) throw std::invalid_argument("simulate: the step did not complete:\n" + format_deadlock(set, run));
  SimMetrics m;
  m.step_time_ms = run.makespan_ms;
  const std::vector<ProgramIndex> index = index_programs(set);
  double comm_total = 0, overlap_total = 0;
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    const bool detail = !opts.detail || opts.detail(prog);
    RankMetrics rm;
    rm.rank = prog.rank;
    rm.pp_rank = prog.pp_rank;
    std::vector<std::pair<double, double>> compute, reduce;
    const ProgramIndex& pix = index[p];
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      const InstrTiming& ti = run.timing[p][k];
      const bool on_compute = i.stream == "compute";
      rm.step_end_ms = std::max(rm.step_end_ms, ti.end_ms);
      if (is_work(i.op)) {
        rm.compute_ms += ti.end_ms - ti.start_ms;
        compute.emplace_back(ti.start_ms, ti.end_ms);
      }
      if (i.op == OpKind::REDUCE_GRAD) reduce.emplace_back(ti.start_ms, ti.end_ms);
      if (i.op == OpKind::BATCH && detail &&
          std::any_of(i.p2p.begin(), i.p2p.end(), [](const P2POp& op) { return !is_send(op.kind); }))
        m.p2p.push_back({prog.rank, static_cast<int32_t>(k), i.stream, to_text(i), ti.start_ms,
                         ti.end_ms - cost.batch_ms(prog, i), ti.end_ms});
      if (!on_compute) continue;
      std::optional<StreamWait> w;
      if (is_collective(i.op)) {
        w = StreamWait{prog.rank, i.stream, static_cast<int32_t>(k), to_text(i), "", kind_of(i.op),
                       ti.start_ms, ti.end_ms, to_text(i), std::nullopt};
      } else if (i.op == OpKind::WAIT) {
        w = StreamWait{prog.rank, i.stream, static_cast<int32_t>(k), to_text(i), i.event, WaitKind::OTHER,
                       ti.ready_ms, ti.start_ms, "", std::nullopt};
        if (auto rec = pix.record_of(i.event))
          if (auto work = pix.recorded_work(prog, *rec)) {
            const Instr& c = prog.instrs[*work];
            w->kind = kind_of(c.op);
            w->cause = to_text(c);
            for (const P2POp& op : c.p2p)
              if (!is_send(op.kind) && !w->peer) w->peer = op.peer;
          }
      }
      if (!w || w->ms() <= 0) continue;
      rm.compute_wait_ms += w->ms();
      if (w->kind == WaitKind::REDUCE) rm.reduce_exposed_ms += w->ms();
      if (!rm.longest_compute_wait || w->ms() > rm.longest_compute_wait->ms() + kEps) rm.longest_compute_wait = w;
      if (detail) m.compute_waits.push_back(*w);
    }
    for (auto [a, b] : reduce) rm.reduce_comm_ms += b - a;
    rm.reduce_overlap_ms = intersection(compute, reduce);
    if (rm.reduce_comm_ms > 0) rm.reduce_overlap_ratio = rm.reduce_overlap_ms / rm.reduce_comm_ms;
    comm_total += rm.reduce_comm_ms;
    overlap_total += rm.reduce_overlap_ms;
    m.reduce_exposed_ms = std::max(m.reduce_exposed_ms, rm.reduce_exposed_ms);
    m.ideal_compute_ms = std::max(m.ideal_compute_ms, rm.compute_ms);
    // Clamped: a fully busy rank's summed durations may exceed the step by a rounding error, and
    // the analyzer refuses a trace whose own bubble_ratio lies outside [0, 1].
    if (m.step_time_ms > 0) m.bubble_ratio += std::clamp((m.step_time_ms - rm.compute_ms) / m.step_time_ms, 0.0, 1.0);
    m.ranks.push_back(std::move(rm));
  }
  if (!m.ranks.empty()) m.bubble_ratio /= static_cast<double>(m.ranks.size());
  if (m.ideal_compute_ms > 0) m.bubble_over_ideal = (m.step_time_ms - m.ideal_compute_ms) / m.ideal_compute_ms;
  if (comm_total > 0) m.reduce_overlap_ratio = overlap_total / comm_total;
  m.critical_path = Walker{set, run, cost, index}.walk();
  return m;
}

}  // namespace ppstream::sim
