// Per-rank metrics over a time window (formulas: docs/analyze.md) and the analyze() driver.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "chain.h"
#include "intervals.h"
#include "stragglers.h"
#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"

namespace ppstream::analyze {
using detail::Interval;

namespace {

constexpr double kNsPerMs = 1e6;
double ms(int64_t ns) { return static_cast<double>(ns) / kNsPerMs; }

bool is_comm(SliceKind k) { return k == SliceKind::COLLECTIVE || k == SliceKind::P2P; }

bool is_recv_wait(const Slice& s) {
  if (s.kind != SliceKind::P2P) return false;
  if (s.p2p.empty()) return true;  // direction not recorded (NCCL SendRecv): counted
  return std::any_of(s.p2p.begin(), s.p2p.end(), [](const P2PPart& p) { return p.dir == P2PDir::RECV; });
}

OverlapMetrics overlap_of(std::string kind, std::string group, std::vector<Interval> comm,
                          const std::vector<Interval>& compute) {
  OverlapMetrics o;
  o.kind = std::move(kind);
  o.group = std::move(group);
  auto merged = detail::merge(std::move(comm));
  int64_t c = detail::length(merged);
  int64_t both = detail::intersection(merged, compute);
  o.comm_ms = ms(c);
  o.overlap_ms = ms(both);
  o.exposed_ms = ms(c - both);
  if (c > 0) o.ratio = static_cast<double>(both) / static_cast<double>(c);
  return o;
}

}  // namespace

namespace detail {

RankMetrics rank_metrics(const TraceSet& set, const P2PPairs& pairs, const RankTimeline& tl, const StepSelection& sel,
                         std::vector<P2PWait>* waits, const RankClocks& clocks) {
  const StepMarker* marker = sel.marker;
  RankMetrics m;
  m.rank = tl.rank;
  m.pp_rank = tl.pp_rank;
  if (tl.streams.empty()) return m;
  const uint32_t cs = compute_stream(tl);
  const int64_t tol = tolerance(set);
  int64_t exposed = 0;
  m.compute_stream = tl.streams[cs].name;
  std::vector<Interval> compute, comm_all, coll, p2p, reduce;
  std::map<std::pair<std::string, std::string>, std::vector<Interval>> by_group;
  std::vector<std::vector<Interval>> busy(tl.streams.size());
  std::vector<StreamMetrics> streams(tl.streams.size());
  int64_t first = INT64_MAX, last = INT64_MIN;        // any device slice
  int64_t dev_first = INT64_MAX, dev_last = INT64_MIN;  // compute and communication
  for (size_t si = 0; si < tl.slices.size(); ++si) {
    const Slice& s = tl.slices[si];
    if (!sel.contains(s)) continue;
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
      const WaitRelease rel = wait_releaser(tl, si, tol);
      ++(rel.rule == WaitRule::RECORD   ? m.waits_by_record
         : rel.rule == WaitRule::STREAM ? m.waits_by_stream
                                        : m.waits_by_timing);
      if (s.stream == cs && rel.slice && is_reduction(tl.slices[*rel.slice])) exposed += s.dur_ns;
      continue;
    }
    if (is_reduction(s)) {
      reduce.push_back(iv);
      if (s.stream == cs) exposed += s.dur_ns;  // issued and run on the compute stream itself
    }
    busy[s.stream].push_back(iv);
    if (s.kind == SliceKind::COMPUTE) compute.push_back(iv);
    if (is_comm(s.kind)) {
      comm_all.push_back(iv);
      (s.kind == SliceKind::COLLECTIVE ? coll : p2p).push_back(iv);
      const std::string& g = set.strings.str(s.group);
      if (!g.empty()) by_group[{to_string(s.kind), g}].push_back(iv);
    }
    if (is_recv_wait(s)) {
      // DESIGN.md: recv issued → matched; the rest of the slice is the transfer.
      const auto matched = pairs.matched_ns(tl, si);
      const int64_t wait = matched ? std::min(*matched, s.end_ns()) - s.start_ns : s.dur_ns;
      m.pp_wait_ms += ms(wait);
      m.pp_transfer_ms += ms(s.dur_ns - wait);
      ++m.p2p_recvs;
      if (!matched) ++m.p2p_unpaired;
      if (waits) {
        waits->push_back(P2PWait{tl.rank, tl.streams[s.stream].name, set.strings.str(s.name),
                                 clocks.at_ms(tl.rank, s.start_ns), ms(wait), ms(s.dur_ns - wait), matched.has_value()});
      }
    }
  }
  auto cmp = detail::merge(std::move(compute));
  m.compute_ms = ms(detail::length(cmp));
  for (size_t i = 0; i < streams.size(); ++i) {
    streams[i].stream = tl.streams[i].name;
    streams[i].busy_ms = ms(detail::length(detail::merge(std::move(busy[i]))));
    m.stream_wait_ms += streams[i].wait_ms;
    if (i == cs) m.compute_wait_ms = streams[i].wait_ms;
    if (streams[i].busy_ms > 0 || streams[i].waits > 0) m.streams.push_back(streams[i]);
  }
  m.overlap.push_back(overlap_of("all", "", std::move(comm_all), cmp));
  m.overlap.push_back(overlap_of("collective", "", std::move(coll), cmp));
  m.overlap.push_back(overlap_of("p2p", "", std::move(p2p), cmp));
  for (auto& [key, ivs] : by_group) m.overlap.push_back(overlap_of(key.first, key.second, std::move(ivs), cmp));
  auto red = overlap_of("reduce", "", std::move(reduce), cmp);
  m.reduce_exposed_ms = ms(exposed);
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
  return m;
}

}  // namespace detail

namespace {

// The mean marker duration of a rank, if it has markers.
std::optional<double> mean_host_step_ms(const TraceSet& set, Rank rank) {
  for (const auto& tl : set.ranks) {
    if (tl.rank != rank || tl.steps.empty()) continue;
    int64_t sum = 0;
    for (const auto& m : tl.steps) sum += m.end_ns - m.start_ns;
    return ms(sum) / static_cast<double>(tl.steps.size());
  }
  return std::nullopt;
}

// Index of step number `step` on a rank, if it has that marker.
std::optional<size_t> step_index(const RankTimeline& tl, int64_t step) {
  for (size_t i = 0; i < tl.steps.size(); ++i) {
    if (tl.steps[i].step == step) return i;
  }
  return std::nullopt;
}

// The set-level figures over a window of `time_ms`, as the simulator defines them (sim/metrics.h); a rank whose compute
// exceeds the step time (device lag) has bubble 0, never a negative ratio.
void set_figures(StepMetrics& sm, double time_ms) {
  double comm = 0, overlap = 0;
  sm.bubble_ratio = 0;
  for (const auto& r : sm.ranks) {
    const double base = std::max(time_ms, r.compute_ms);
    if (base > 0) sm.bubble_ratio += (base - r.compute_ms) / base;
    sm.reduce_exposed_ms = std::max(sm.reduce_exposed_ms, r.reduce_exposed_ms);
    comm += r.reduce_comm_ms;
    overlap += r.reduce_overlap_ms;
  }
  if (!sm.ranks.empty()) sm.bubble_ratio /= static_cast<double>(sm.ranks.size());
  if (comm > 0) sm.reduce_overlap_ratio = overlap / comm;
}

StepMetrics step_metrics(const TraceSet& set, const detail::P2PPairs& pairs, int64_t step, std::vector<P2PWait>* waits,
                         const detail::RankClocks& clocks, std::pair<int64_t, int64_t>* window) {
  StepMetrics sm;
  sm.step = step;
  for (const auto& tl : set.ranks) {
    auto i = step_index(tl, step);
    if (!i) continue;
    std::vector<bool> only(tl.steps.size(), false);
    only[*i] = true;
    const int64_t hi = *i + 1 < tl.steps.size() ? tl.steps[*i + 1].start_ns : INT64_MAX;
    if (window) *window = {std::min(window->first, tl.steps[*i].start_ns), std::max(window->second, hi)};
    sm.ranks.push_back(detail::rank_metrics(set, pairs, tl, {&only, &tl.steps[*i]}, waits, clocks));
    sm.step_time_ms = std::max(sm.step_time_ms, sm.ranks.back().step_time_ms);
    sm.span_ms = std::max(sm.span_ms, sm.ranks.back().span_ms);
  }
  set_figures(sm, sm.step_time_ms);
  return sm;
}

// All steps of each rank but its last, as Holistic Trace Analysis does by default.
std::optional<StepMetrics> hta_window(const TraceSet& set, const detail::P2PPairs& pairs, const detail::RankClocks& clocks) {
  StepMetrics sm;
  sm.window = "hta_window";
  for (const auto& tl : set.ranks) {
    if (tl.steps.size() < 2) continue;
    std::vector<bool> but_last(tl.steps.size(), true);
    but_last.back() = false;
    sm.ranks.push_back(detail::rank_metrics(set, pairs, tl, {&but_last, nullptr}, nullptr, clocks));
    sm.span_ms = std::max(sm.span_ms, sm.ranks.back().span_ms);
  }
  if (sm.ranks.empty()) return std::nullopt;
  sm.step_time_ms = sm.span_ms;
  set_figures(sm, sm.span_ms);
  return sm;
}

void add_vendor(const TraceSet& set, AnalysisResult& r) {
  for (const auto& row : set.step_trace) {
    std::string scope = row.type.empty() ? row.index : fmt::format("{} {}", row.type, row.index);
    if (row.step) scope += fmt::format(" step {}", *row.step);
    for (const auto& [col, v] : row.values) {
      r.vendor.push_back(VendorFigure{row.source, row.producer, scope, col, v / 1000.0});
    }
  }
}

}  // namespace

AnalysisResult analyze(const TraceSet& set, const AnalyzeOptions& opts) {
  AnalysisResult r;
  r.sources = set.sources;
  r.notes = set.notes;
  r.selected_step = opts.step;
  r.producer_metrics = set.producer_metrics;
  r.comm_ops = set.comm_ops;
  r.comm_links = set.comm_links;
  r.dropped_events = set.dropped_events;
  if (set.dropped_events > 5) {
    r.notes.push_back(fmt::format("{} events dropped in all for an out-of-bounds duration (the first 5 are named above)",
                                  set.dropped_events));
  }
  add_vendor(set, r);
  const detail::P2PPairs pairs(set);
  const detail::RankClocks clocks(set, pairs);
  r.clock_base = to_string(clocks.base());
  if (clocks.base() == detail::ClockBase::OWN_START) {
    r.notes.push_back("the ranks' clocks could not be put on one base (no shared clock, base times or P2P pairs "
                      "linking every rank): each position (start_ms, at_ms) is relative to its own rank's first "
                      "device slice");
  }
  std::vector<P2PWait> waits;
  std::pair<int64_t, int64_t> window{INT64_MAX, INT64_MIN};
  if (opts.step) {
    r.total = step_metrics(set, pairs, *opts.step, &waits, clocks, &window);
    if (r.total.ranks.empty() && !set.ranks.empty()) {
      std::vector<int64_t> have;
      for (const auto& tl : set.ranks) {
        for (const auto& s : tl.steps) have.push_back(s.step);
      }
      std::sort(have.begin(), have.end());
      have.erase(std::unique(have.begin(), have.end()), have.end());
      throw TraceError(fmt::format("{}: --step {}: no such step marker; the traces have steps [{}]",
                                   set.sources.empty() ? "analyze" : set.sources.front(), *opts.step,
                                   fmt::join(have, ", ")));
    }
  } else {
    window = {INT64_MIN, INT64_MAX};
    r.total.window = "whole trace";
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (const auto& tl : set.ranks) {
      r.total.ranks.push_back(detail::rank_metrics(set, pairs, tl, {}, &waits, clocks));
      r.total.span_ms = std::max(r.total.span_ms, r.total.ranks.back().span_ms);
      for (const auto& s : tl.slices) {
        if (s.kind == SliceKind::HOST) continue;
        first = std::min(first, s.start_ns);
        last = std::max(last, s.end_ns());
      }
    }
    if (set.global_clock && last > first) r.total.span_ms = ms(last - first);
    std::vector<int64_t> steps;
    for (const auto& tl : set.ranks) {
      for (const auto& s : tl.steps) steps.push_back(s.step);
    }
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    for (int64_t s : steps) r.steps.push_back(step_metrics(set, pairs, s, nullptr, clocks, nullptr));
    // With markers the whole trace is not one step: its step_time_ms is the steps' mean and the
    // span is reported as span_ms only.
    r.total.step_time_ms = r.total.span_ms;
    if (!r.steps.empty()) {
      double sum = 0;
      for (const auto& st : r.steps) sum += st.step_time_ms;
      r.total.step_time_ms = sum / static_cast<double>(r.steps.size());
      for (auto& rm : r.total.ranks) rm.step_time_ms = mean_host_step_ms(set, rm.rank).value_or(rm.span_ms);
    }
    set_figures(r.total, r.total.span_ms);
    r.hta_window = hta_window(set, pairs, clocks);
  }
  std::sort(waits.begin(), waits.end(),
            [](const P2PWait& a, const P2PWait& b) { return a.wait_ms > b.wait_ms; });
  if (waits.size() > 10) waits.resize(10);
  r.longest_pp_waits = std::move(waits);
  detail::stragglers(set, opts.step, r);
  r.chains = detail::wait_chains(set, pairs, window.first, window.second, opts.chains, clocks);
  return r;
}

AnalysisResult analyze_paths(const std::vector<std::string>& paths, const AnalyzeOptions& opts) {
  TraceSet set;
  read_paths(paths, set);
  return analyze(set, opts);
}

}  // namespace ppstream::analyze
