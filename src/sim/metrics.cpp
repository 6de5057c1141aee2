// compute_metrics: per-rank waits, busy time, reduction overlap and the critical path of one
// engine run (definitions in include/ppstream/sim/metrics.h).
#include "ppstream/sim/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>

#include "ppstream/program/deps.h"
#include "ppstream/program/format.h"
#include "ppstream/program/intervals.h"
#include "ppstream/program/streams.h"
#include "engine/topology.h"

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

// The lookups the critical-path walk and the wait attribution need, from the set's Topology
// (stream lists, each event's first RECORD, P2P mirrors by channel position): O(instructions)
// to build, O(1) per question.
struct Lookups {
  const engine::Topology& topo;
  std::vector<int32_t> prev_on_stream;  // per global instruction: the previous one on its stream (index), or -1

  explicit Lookups(const engine::Topology& t) : topo(t), prev_on_stream(t.stream_of.size(), -1) {
    for (int32_t p = 0; p < t.programs(); ++p)
      for (int32_t slot = t.stream_base[p]; slot < t.stream_base[p + 1]; ++slot)
        for (int32_t j = t.stream_list_base[slot] + 1; j < t.stream_list_base[slot + 1]; ++j)
          prev_on_stream[static_cast<size_t>(t.global(p, t.stream_list[j]))] = t.stream_list[j - 1];
  }
  std::optional<size_t> prev(size_t p, size_t k) const {
    const int32_t x = prev_on_stream[static_cast<size_t>(topo.global(static_cast<int32_t>(p), static_cast<int32_t>(k)))];
    return x < 0 ? std::nullopt : std::optional<size_t>(static_cast<size_t>(x));
  }
  // The RECORD a WAIT (at index k of program p) synchronizes with (Topology::synced_record).
  std::optional<size_t> record_of(size_t p, size_t k) const {
    const int32_t r = topo.synced_record(static_cast<int32_t>(p), static_cast<int32_t>(k));
    return r == engine::kNone ? std::nullopt : std::optional<size_t>(static_cast<size_t>(r));
  }
  // The instruction whose completion a RECORD marks: the last non-RECORD/RESHARD before it on
  // its stream (RESHARD is free and follows its REDUCE_GRAD).
  std::optional<size_t> recorded_work(size_t p, size_t record_k) const {
    const Program& prog = topo.program(static_cast<int32_t>(p));
    for (auto k = prev(p, record_k); k; k = prev(p, *k)) {
      const OpKind op = prog.instrs[*k].op;
      if (op != OpKind::RECORD && op != OpKind::RESHARD) return k;
    }
    return std::nullopt;
  }
};

// The wait of the compute-stream instruction k of program p, when it waited (> 0 ms): a WAIT at
// its stream head (attributed to the work its event's RECORD follows), or a collective issued
// on compute (CommHandle.wait).
std::optional<StreamWait> compute_wait(const Lookups& look, size_t p, size_t k, const InstrTiming& ti) {
  const Program& prog = look.topo.program(static_cast<int32_t>(p));
  const Instr& i = prog.instrs[k];
  if (is_collective(i.op)) {
    if (ti.end_ms - ti.start_ms <= 0) return std::nullopt;
    return StreamWait{prog.rank, prog.stream_name(i.stream), static_cast<int32_t>(k), to_text(prog, i), "", kind_of(i.op),
                      ti.start_ms, ti.end_ms, to_text(prog, i), std::nullopt};
  }
  if (i.op != OpKind::WAIT || ti.start_ms - ti.ready_ms <= 0) return std::nullopt;
  StreamWait w{prog.rank, prog.stream_name(i.stream), static_cast<int32_t>(k), to_text(prog, i), prog.event_name(i.event), WaitKind::OTHER,
               ti.ready_ms, ti.start_ms, "", std::nullopt};
  if (auto rec = look.record_of(p, k))
    if (auto work = look.recorded_work(p, *rec)) {
      const Instr& c = prog.instrs[*work];
      w.kind = kind_of(c.op);
      w.cause = to_text(prog, c);
      for (const P2POp& op : c.p2p)
        if (!is_send(op.kind) && !w.peer) w.peer = op.peer;
    }
  return w;
}

struct Walker {
  const ProgramSet& set;
  const EngineResult& run;
  const CostModel& cost;
  const Lookups& look;

  const InstrTiming& t(size_t p, size_t k) const { return run.timing[p][k]; }

  // The peer batch holding the mirror of one of this batch's ops that was posted at `matched`.
  std::optional<std::pair<size_t, size_t>> mirror_batch(size_t p, size_t k, double matched) const {
    const engine::Topology& topo = look.topo;
    const Program& prog = set.programs[p];
    const int32_t first = topo.first_op(topo.global(static_cast<int32_t>(p), static_cast<int32_t>(k)));
    for (size_t j = 0; j < prog.instrs[k].p2p.size(); ++j) {
      const int32_t m = topo.mirror[static_cast<size_t>(first) + j];
      if (m == engine::kNone || !(topo.op(m) == mirror_of(prog.instrs[k].p2p[j], prog.rank))) continue;
      const int32_t g = topo.op_instr[static_cast<size_t>(m)];
      const int32_t q = topo.prog_of_global(g);
      const auto qk = static_cast<size_t>(g - topo.instr_base[q]);
      if (std::abs(t(static_cast<size_t>(q), qk).start_ms - matched) < kEps) return std::pair{static_cast<size_t>(q), qk};
    }
    return std::nullopt;
  }

  // Start from the instruction that ends last (ties: lowest program, then index).
  std::vector<CriticalStep> walk() const {
    size_t p = 0, k = 0;
    double best = -1;
    for (size_t a = 0; a < set.programs.size(); ++a)
      for (size_t b = 0; b < set.programs[a].instrs.size(); ++b)
        if (t(a, b).end_ms > best + kEps) best = t(a, b).end_ms, p = a, k = b;
    return walk_from(p, k);
  }

  std::vector<CriticalStep> walk_from(size_t p, size_t k) const {
    std::vector<CriticalStep> path;
    size_t total = 0;  // each step moves to an instruction that ends no later: at most one visit each
    for (const Program& q : set.programs) total += q.instrs.size();
    for (size_t guard = 0; guard <= total; ++guard) {
      const Program& prog = set.programs[p];
      const Instr& i = prog.instrs[k];
      const InstrTiming& ti = t(p, k);
      CriticalStep step{prog.rank, prog.stream_name(i.stream), static_cast<int32_t>(k), to_text(prog, i), ti.start_ms, ti.end_ms, ""};
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
        if (auto rec = look.record_of(p, k)) {
          next = std::pair{p, *rec};
          step.via = "event " + prog.event_name(i.event);
        }
      }
      if (!next) {
        const auto prev = look.prev(p, k);
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

// The figures of program p (its detail lists into `detail` when given).
RankMetrics rank_metrics(const Lookups& look, const EngineResult& run, size_t p, const CostModel& cost, SimMetrics* detail) {
  const Program& prog = look.topo.program(static_cast<int32_t>(p));
  RankMetrics rm;
  rm.rank = prog.rank;
  rm.pp_rank = prog.pp_rank;
  std::vector<std::pair<double, double>> compute, reduce;
  for (size_t k = 0; k < prog.instrs.size(); ++k) {
    const Instr& i = prog.instrs[k];
    const InstrTiming& ti = run.timing[p][k];
    const bool on_compute = i.stream == streams::kCompute;
    rm.step_end_ms = std::max(rm.step_end_ms, ti.end_ms);
    if (is_work(i.op)) {
      rm.compute_ms += ti.end_ms - ti.start_ms;
      compute.emplace_back(ti.start_ms, ti.end_ms);
    }
    if (i.op == OpKind::REDUCE_GRAD) reduce.emplace_back(ti.start_ms, ti.end_ms);
    if (i.op == OpKind::BATCH && detail &&
        std::any_of(i.p2p.begin(), i.p2p.end(), [](const P2POp& op) { return !is_send(op.kind); }))
      detail->p2p.push_back({prog.rank, static_cast<int32_t>(k), prog.stream_name(i.stream), to_text(prog, i), ti.start_ms,
                             ti.end_ms - cost.batch_ms(prog, i), ti.end_ms});
    if (!on_compute) continue;
    const std::optional<StreamWait> w = compute_wait(look, p, k, ti);
    if (!w) continue;
    rm.compute_wait_ms += w->ms();
    if (w->kind == WaitKind::REDUCE) rm.reduce_exposed_ms += w->ms();
    if (!rm.longest_compute_wait || w->ms() > rm.longest_compute_wait->ms() + kEps) rm.longest_compute_wait = w;
    if (detail) detail->compute_waits.push_back(*w);
  }
  for (auto [a, b] : reduce) rm.reduce_comm_ms += b - a;
  rm.reduce_overlap_ms = intersection(compute, reduce);
  if (rm.reduce_comm_ms > 0) rm.reduce_overlap_ratio = rm.reduce_overlap_ms / rm.reduce_comm_ms;
  return rm;
}

// The set-level sums over ranks, in set order.
struct Totals {
  double comm = 0, overlap = 0;
};

void add_rank(SimMetrics& m, Totals& tot, RankMetrics rm) {
  tot.comm += rm.reduce_comm_ms;
  tot.overlap += rm.reduce_overlap_ms;
  m.reduce_exposed_ms = std::max(m.reduce_exposed_ms, rm.reduce_exposed_ms);
  m.ideal_compute_ms = std::max(m.ideal_compute_ms, rm.compute_ms);
  // Clamped: a fully busy rank's summed durations may exceed the step by a rounding error, and
  // the analyzer refuses a trace whose own bubble_ratio lies outside [0, 1].
  if (m.step_time_ms > 0) m.bubble_ratio += std::clamp((m.step_time_ms - rm.compute_ms) / m.step_time_ms, 0.0, 1.0);
  m.ranks.push_back(std::move(rm));
}

void finish_totals(SimMetrics& m, const Totals& tot) {
  if (!m.ranks.empty()) m.bubble_ratio /= static_cast<double>(m.ranks.size());
  if (m.ideal_compute_ms > 0) m.bubble_over_ideal = (m.step_time_ms - m.ideal_compute_ms) / m.ideal_compute_ms;
  if (tot.comm > 0) m.reduce_overlap_ratio = tot.overlap / tot.comm;
}

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
  std::optional<engine::Topology> own;  // built here when the caller has none
  if (!opts.topology) own = engine::build_topology(set);
  const Lookups look(opts.topology ? *opts.topology : *own);
  Totals tot;
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    const bool detail = !opts.detail || opts.detail(prog);
    add_rank(m, tot, rank_metrics(look, run, p, cost, detail ? &m : nullptr));
  }
  finish_totals(m, tot);
  m.critical_path = Walker{set, run, cost, look}.walk();
  return m;
}

SimMetrics compute_replica_metrics(ProgramSet& tmpl, const engine::Topology& topo, const ReplicaRun& run,
                                   const CostModel& cost, const MetricsOptions& opts) {
  const int32_t dp = run.replicas();
  const size_t pp = tmpl.programs.size();
  const auto at = [dp](size_t p, int32_t d) { return p * static_cast<size_t>(dp) + static_cast<size_t>(d); };
  SimMetrics m;
  m.step_time_ms = run.makespan_ms();
  const Lookups look(topo);
  std::vector<RankMetrics> ranks(pp * static_cast<size_t>(dp));
  std::map<size_t, SimMetrics> detail;  // per expanded program index with detail: its lists
  for (int32_t d = 0; d < dp; ++d) {
    renumber_replica(tmpl, d);
    const EngineResult rd = run.replica(d);
    for (size_t p = 0; p < pp; ++p) {
      SimMetrics* lists = !opts.detail || opts.detail(tmpl.programs[p]) ? &detail[at(p, d)] : nullptr;
      ranks[at(p, d)] = rank_metrics(look, rd, p, cost, lists);
    }
  }
  Totals tot;
  for (size_t g = 0; g < ranks.size(); ++g) {
    add_rank(m, tot, std::move(ranks[g]));
    if (const auto it = detail.find(g); it != detail.end()) {
      m.p2p.insert(m.p2p.end(), it->second.p2p.begin(), it->second.p2p.end());
      m.compute_waits.insert(m.compute_waits.end(), it->second.compute_waits.begin(), it->second.compute_waits.end());
    }
  }
  finish_totals(m, tot);
  // The walk's start as Walker::walk finds it over the expanded set's order; it stays in its replica.
  size_t sp = 0, sk = 0;
  int32_t sd = 0;
  double best = -1;
  for (size_t p = 0; p < pp; ++p)
    for (int32_t d = 0; d < dp; ++d)
      for (size_t k = 0; k < tmpl.programs[p].instrs.size(); ++k) {
        const double end = run.timing(static_cast<int32_t>(p), static_cast<int32_t>(k), d).end_ms;
        if (end > best + kEps) best = end, sp = p, sk = k, sd = d;
      }
  renumber_replica(tmpl, sd);
  const EngineResult rd = run.replica(sd);
  m.critical_path = Walker{tmpl, rd, cost, look}.walk_from(sp, sk);
  renumber_replica(tmpl, 0);
  return m;
}

}  // namespace ppstream::sim
