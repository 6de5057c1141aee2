// The per-rank part of the analysis (rank_digest.h): one pass per window over one rank's slices;
// the formulas are docs/analyze.md "Metrics".
#include "rank_digest.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include "chain.h"
#include "clocks.h"
#include "intervals.h"
#include "p2p_pairs.h"

namespace ppstream::analyze::detail {
namespace {

constexpr double kNsPerMs = 1e6;
double ms(int64_t ns) { return static_cast<double>(ns) / kNsPerMs; }

bool is_comm(SliceKind k) { return k == SliceKind::COLLECTIVE || k == SliceKind::P2P; }

// Receiving P2P slices wait (DESIGN.md: recv issued → matched).
bool is_recv_wait(const P2PRecord& p) {
  if (p.p2p.empty()) return true;  // direction not recorded (NCCL SendRecv): counted
  return std::any_of(p.p2p.begin(), p.p2p.end(), [](const P2PPart& q) { return q.dir == P2PDir::RECV; });
}

OverlapMetrics overlap_of(std::string kind, std::string group, std::vector<Interval> comm,
                          const std::vector<Interval>& compute) {
  OverlapMetrics o;
  o.kind = std::move(kind);
  o.group = std::move(group);
  auto merged = merge(std::move(comm));
  int64_t c = length(merged);
  int64_t both = intersection(merged, compute);
  o.comm_ms = ms(c);
  o.overlap_ms = ms(both);
  o.exposed_ms = ms(c - both);
  if (c > 0) o.ratio = static_cast<double>(both) / static_cast<double>(c);
  return o;
}

// What released one stream wait, under one tolerance (wait_releaser, chain.h).
struct Released {
  WaitRule rule = WaitRule::TIMING;
  bool by_reduction = false;
};
using Releases = std::vector<std::array<Released, kTols>>;  // per slice (stream waits only filled)

constexpr int64_t tol_ns(Tol t) { return t == Tol::GLOBAL ? kGlobalClockTolNs : kPerRankClockTolNs; }

Releases releases(const RankTimeline& tl, const std::array<bool, kTols>& tols) {
  Releases out(tl.slices.size());
  for (size_t i = 0; i < tl.slices.size(); ++i) {
    if (tl.slices[i].kind != SliceKind::STREAM_WAIT) continue;
    for (size_t t = 0; t < kTols; ++t) {
      if (!tols[t]) continue;
      const WaitRelease rel = wait_releaser(tl, i, tol_ns(static_cast<Tol>(t)));
      out[i][t] = Released{rel.rule, rel.slice && is_reduction(tl.slices[*rel.slice])};
    }
  }
  return out;
}

// The window's stream figures and intervals in one pass (the body of the per-rank metrics).
WindowFigures window_figures(const RankTimeline& tl, const StringTable& strings, const StepSelection& sel, uint32_t cs,
                             const Releases& rel, const std::array<bool, kTols>& tols) {
  WindowFigures w;
  w.sel = sel;
  for (size_t t = 0; t < kTols; ++t) {
    if (tols[t]) w.by_tol[t] = WindowFigures::Attribution{};
  }
  RankMetrics& m = w.m;
  m.rank = tl.rank;
  m.pp_rank = tl.pp_rank;
  if (tl.streams.empty()) return w;
  const StepMarker* marker = sel.kind == StepSelection::Kind::ONE ? &tl.steps[sel.step] : nullptr;
  m.compute_stream = tl.streams[cs].name;
  std::vector<Interval> compute, comm_all, coll, p2p, reduce;
  std::map<std::pair<std::string, std::string>, std::vector<Interval>> by_group;
  std::vector<std::vector<Interval>> busy(tl.streams.size());
  std::vector<StreamMetrics> streams(tl.streams.size());
  int64_t first = INT64_MAX, last = INT64_MIN;        // any device slice
  int64_t dev_first = INT64_MAX, dev_last = INT64_MIN;  // compute and communication
  for (size_t si = 0; si < tl.slices.size(); ++si) {
    const Slice& s = tl.slices[si];
    if (!sel.contains(s.step)) continue;
    if (s.kind == SliceKind::HOST) continue;
    first = std::min(first, s.start_ns);
    last = std::max(last, s.end_ns());
    if (s.kind == SliceKind::COMPUTE || is_comm(s.kind)) {
      dev_first = std::min(dev_first, s.start_ns);
      dev_last = std::max(dev_last, s.end_ns());
    }
    Interval iv{s.start_ns, s.end_ns()};
    auto& sm = streams[s.stream];
    if (s.kind == SliceKind::STREAM_WAIT) {
      sm.wait_ms += ms(s.dur_ns);
      ++sm.waits;
      // Compute blocked on a reduction: the wait is released by a reduction (its recorded
      // event's producer where the trace says it, else the one ending with it on another stream).
      for (size_t t = 0; t < kTols; ++t) {
        if (!w.by_tol[t]) continue;
        auto& a = *w.by_tol[t];
        const Released& r = rel[si][t];
        ++(r.rule == WaitRule::RECORD ? a.by_record : r.rule == WaitRule::STREAM ? a.by_stream : a.by_timing);
        if (s.stream == cs && r.by_reduction) a.reduce_wait_ns += s.dur_ns;
      }
      continue;
    }
    if (is_reduction(s)) {
      reduce.push_back(iv);
      if (s.stream == cs) w.reduce_on_compute_ns += s.dur_ns;  // issued and run on the compute stream itself
    }
    busy[s.stream].push_back(iv);
    if (s.kind == SliceKind::COMPUTE) compute.push_back(iv);
    if (is_comm(s.kind)) {
      comm_all.push_back(iv);
      (s.kind == SliceKind::COLLECTIVE ? coll : p2p).push_back(iv);
      const std::string& g = strings.str(s.group);
      if (!g.empty()) by_group[{to_string(s.kind), g}].push_back(iv);
    }
  }
  auto cmp = merge(std::move(compute));
  m.compute_ms = ms(length(cmp));
  for (size_t i = 0; i < streams.size(); ++i) {
    streams[i].stream = tl.streams[i].name;
    streams[i].busy_ms = ms(length(merge(std::move(busy[i]))));
    m.stream_wait_ms += streams[i].wait_ms;
    if (i == cs) m.compute_wait_ms = streams[i].wait_ms;
    if (streams[i].busy_ms > 0 || streams[i].waits > 0) m.streams.push_back(streams[i]);
  }
  m.overlap.push_back(overlap_of("all", "", std::move(comm_all), cmp));
  m.overlap.push_back(overlap_of("collective", "", std::move(coll), cmp));
  m.overlap.push_back(overlap_of("p2p", "", std::move(p2p), cmp));
  for (auto& [key, ivs] : by_group) m.overlap.push_back(overlap_of(key.first, key.second, std::move(ivs), cmp));
  auto red = overlap_of("reduce", "", std::move(reduce), cmp);
  m.reduce_comm_ms = red.comm_ms;
  m.reduce_overlap_ms = red.overlap_ms;
  m.reduce_unoverlapped_ms = red.exposed_ms;
  m.reduce_overlap_ratio = red.ratio;
  m.comm_ms = m.overlap[0].comm_ms;
  m.overlapped_ms = m.overlap[0].overlap_ms;
  m.comm_not_overlapped_ms = m.overlap[0].exposed_ms;
  if (last > first) m.span_ms = ms(last - first);
  if (dev_last > dev_first) m.device_step_ms = ms(dev_last - dev_first);
  m.free_ms = std::max(0.0, m.device_step_ms - m.compute_ms - m.comm_not_overlapped_ms);
  // Bubble over the step's extent: device work lagging past the marker's end stays in its step,
  // so the base is the later of the marker's end and the last slice's end (ratio in [0, 1]).
  double base = m.span_ms;
  if (marker) {
    m.host_step_ms = ms(marker->end_ns - marker->start_ns);
    m.step_time_ms = *m.host_step_ms;
    if (dev_last > dev_first) m.preparing_ms = ms(dev_first - marker->start_ns);
    base = std::max(m.step_time_ms, last > first ? ms(last - std::min(first, marker->start_ns)) : 0.0);
  } else {
    m.step_time_ms = m.span_ms;
  }
  m.bubble_ms = std::clamp(base - m.compute_ms, 0.0, base);
  m.bubble_ratio = base > 0 ? m.bubble_ms / base : 0.0;
  return w;
}

// The windows of docs/analyze.md "Steps": the whole trace, each step number (its first marker),
// all steps but the last; or only the chosen step.
void add_windows(const RankTimeline& tl, const StringTable& strings, const DigestOptions& opts, uint32_t cs,
                 RankDigest& d) {
  const Releases rel = releases(tl, opts.tols);
  auto one = [&](size_t i) {
    return window_figures(tl, strings, {StepSelection::Kind::ONE, static_cast<uint32_t>(i)}, cs, rel, opts.tols);
  };
  if (opts.step) {
    for (size_t i = 0; i < tl.steps.size(); ++i) {
      if (tl.steps[i].step == *opts.step) {
        d.total = one(i);
        break;
      }
    }
    return;
  }
  d.total = window_figures(tl, strings, {}, cs, rel, opts.tols);
  std::map<int64_t, size_t> first_of;  // step number → its first marker
  for (size_t i = 0; i < tl.steps.size(); ++i) first_of.emplace(tl.steps[i].step, i);
  for (const auto& [step, i] : first_of) d.by_step.emplace_back(step, one(i));
  if (tl.steps.size() >= 2) {
    d.hta = window_figures(tl, strings, {StepSelection::Kind::ALL_BUT_LAST, static_cast<uint32_t>(tl.steps.size() - 1)},
                           cs, rel, opts.tols);
  }
}

// Per group, the rank's collective ops in start order; a slice with the same name as the
// previous op of the group that starts inside it is part of that op (docs/analyze.md "Stragglers").
void add_collectives(const RankTimeline& tl, const DigestOptions& opts, RankDigest& d) {
  std::map<uint32_t, std::vector<Arrival>> by_group;
  for (const auto& s : tl.slices) {
    if (s.kind != SliceKind::COLLECTIVE || s.group == 0) continue;
    if (opts.step && (!s.step || tl.steps[*s.step].step != *opts.step)) continue;
    auto& ops = by_group[s.group];
    if (!ops.empty() && ops.back().name == s.name && s.start_ns < ops.back().end_ns) {
      ops.back().end_ns = std::max(ops.back().end_ns, s.end_ns());
      continue;
    }
    ops.push_back(Arrival{tl.rank, s.name, s.start_ns, s.end_ns()});
  }
  for (auto& [g, ops] : by_group) d.collectives.push_back(GroupOps{g, std::move(ops)});
}

// The chain walk's candidates (chain.h wait_chains): with the whole trace as window, the
// `chains` longest of each class (compute stream, other streams) are all the set-wide choice
// can take (it orders by duration, rank, index).
void add_waits(const RankTimeline& tl, const DigestOptions& opts, uint32_t cs, RankDigest& d) {
  if (tl.streams.empty()) return;
  for (size_t i = 0; i < tl.slices.size(); ++i) {
    const Slice& s = tl.slices[i];
    if (s.kind == SliceKind::STREAM_WAIT && s.dur_ns > 0) d.waits.push_back({i, s.start_ns, s.dur_ns, s.stream == cs});
  }
  if (opts.step) return;
  std::stable_sort(d.waits.begin(), d.waits.end(), [](const WaitCandidate& a, const WaitCandidate& b) {
    return a.on_compute != b.on_compute ? a.on_compute : a.dur_ns > b.dur_ns;
  });
  std::vector<WaitCandidate> kept;
  size_t compute = 0, other = 0;
  for (const auto& w : d.waits) {
    if ((w.on_compute ? compute : other)++ < opts.chains) kept.push_back(w);
  }
  d.waits = std::move(kept);
}

}  // namespace

std::array<bool, kTols> tols_for(bool global_clock, bool final) {
  std::array<bool, kTols> t{};
  t[static_cast<size_t>(Tol::PER_RANK)] = !(final && global_clock);
  t[static_cast<size_t>(Tol::GLOBAL)] = global_clock;
  return t;
}

Tol tol_of(const TraceSet& set) { return set.global_clock ? Tol::GLOBAL : Tol::PER_RANK; }

RankDigest digest_rank(const RankTimeline& tl, const StringTable& strings, const DigestOptions& opts) {
  RankDigest d;
  d.rank = tl.rank;
  d.source = tl.source;
  for (const auto& s : tl.streams) d.streams.push_back(s.name);
  d.steps = tl.steps;
  d.base_ns = tl.base_ns;
  d.slices = tl.slices.size();
  for (size_t i = 0; i < tl.slices.size(); ++i) {
    const Slice& s = tl.slices[i];
    if (s.kind == SliceKind::P2P) d.p2p.push_back(P2PRecord{i, s.start_ns, s.dur_ns, s.stream, s.name, s.step, s.p2p});
    if (s.kind != SliceKind::HOST && !d.first_start_ns) d.first_start_ns = s.start_ns;
  }
  std::tie(d.first_ns, d.last_ns) = digest_rank_bounds(tl);
  const uint32_t cs = tl.streams.empty() ? 0 : compute_stream(tl);
  add_windows(tl, strings, opts, cs, d);
  add_collectives(tl, opts, d);
  add_waits(tl, opts, cs, d);
  return d;
}

std::pair<int64_t, int64_t> digest_rank_bounds(const RankTimeline& tl) {
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& s : tl.slices) {
    if (s.kind == SliceKind::HOST) continue;
    first = std::min(first, s.start_ns);
    last = std::max(last, s.end_ns());
  }
  return {first, last};
}

void remap_strings(RankDigest& d, const std::vector<uint32_t>& id) {
  for (auto& p : d.p2p) p.name = id[p.name];
  for (auto& g : d.collectives) {
    g.group = id[g.group];
    for (auto& a : g.ops) a.name = id[a.name];
  }
}

RankMetrics finish_window(const RankDigest& d, WindowFigures& w, const P2PPairs& pairs, Tol tol,
                          const StringTable& strings, std::vector<P2PWait>* waits, const RankClocks& clocks) {
  RankMetrics m = std::move(w.m);
  const auto& a = w.by_tol[static_cast<size_t>(tol)];
  if (!a) throw std::logic_error("analyze: a rank's digest lacks the set's clock tolerance");
  m.waits_by_record = a->by_record;
  m.waits_by_stream = a->by_stream;
  m.waits_by_timing = a->by_timing;
  m.reduce_exposed_ms = ms(w.reduce_on_compute_ns + a->reduce_wait_ns);
  for (const auto& p : d.p2p) {
    if (!w.sel.contains(p.step) || !is_recv_wait(p)) continue;
    // DESIGN.md: recv issued → matched; the rest of the slice is the transfer.
    const auto matched = pairs.matched_ns(d.rank, p);
    const int64_t wait = matched ? std::min(*matched, p.end_ns()) - p.start_ns : p.dur_ns;
    m.pp_wait_ms += ms(wait);
    m.pp_transfer_ms += ms(p.dur_ns - wait);
    ++m.p2p_recvs;
    if (!matched) ++m.p2p_unpaired;
    if (waits) {
      waits->push_back(P2PWait{d.rank, d.streams[p.stream], strings.str(p.name), clocks.at_ms(d.rank, p.start_ns),
                               ms(wait), ms(p.dur_ns - wait), matched.has_value()});
    }
  }
  return m;
}

}  // namespace ppstream::analyze::detail
