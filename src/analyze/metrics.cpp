// The cross-rank part of the analysis over the ranks' digests (rank_digest.h: the per-rank
// part), and the analyze() driver (formulas: docs/analyze.md).
#include "analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "chain.h"
#include "clocks.h"
#include "p2p_pairs.h"
#include "rank_digest.h"
#include "rank_source.h"
#include "read_parallel.h"
#include "stragglers.h"
#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"

namespace ppstream::analyze {
namespace {

constexpr double kNsPerMs = 1e6;
double ms(int64_t ns) { return static_cast<double>(ns) / kNsPerMs; }

}  // namespace

namespace {

using detail::RankDigest;
using detail::WindowFigures;

// The mean marker duration of a rank, if it has markers.
std::optional<double> mean_host_step_ms(const RankDigest& d) {
  if (d.steps.empty()) return std::nullopt;
  int64_t sum = 0;
  for (const auto& m : d.steps) sum += m.end_ns - m.start_ns;
  return ms(sum) / static_cast<double>(d.steps.size());
}

// What the cross-rank figures of every window read besides the digests.
struct CrossRank {
  const StringTable& strings;
  const detail::P2PPairs& pairs;
  const detail::RankClocks& clocks;
  detail::Tol tol;
  RankMetrics finish(const RankDigest& d, WindowFigures& w, std::vector<P2PWait>* waits) const {
    return detail::finish_window(d, w, pairs, tol, strings, waits, clocks);
  }
};

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

// One step across ranks: `of` gives a rank's window of that step (absent: the rank lacks it).
StepMetrics step_metrics(std::vector<RankDigest>& ranks, const CrossRank& x, int64_t step,
                         const std::function<WindowFigures*(RankDigest&)>& of, std::vector<P2PWait>* waits,
                         std::pair<int64_t, int64_t>* window) {
  StepMetrics sm;
  sm.step = step;
  for (auto& d : ranks) {
    WindowFigures* w = of(d);
    if (!w) continue;
    const size_t i = w->sel.step;
    const int64_t hi = i + 1 < d.steps.size() ? d.steps[i + 1].start_ns : INT64_MAX;
    if (window) *window = {std::min(window->first, d.steps[i].start_ns), std::max(window->second, hi)};
    sm.ranks.push_back(x.finish(d, *w, waits));
    sm.step_time_ms = std::max(sm.step_time_ms, sm.ranks.back().step_time_ms);
    sm.span_ms = std::max(sm.span_ms, sm.ranks.back().span_ms);
  }
  set_figures(sm, sm.step_time_ms);
  return sm;
}

// All steps of each rank but its last, as Holistic Trace Analysis does by default.
std::optional<StepMetrics> hta_window(std::vector<RankDigest>& ranks, const CrossRank& x) {
  StepMetrics sm;
  sm.window = "hta_window";
  for (auto& d : ranks) {
    if (!d.hta) continue;
    sm.ranks.push_back(x.finish(d, *d.hta, nullptr));
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

namespace detail {

AnalysisResult analyze_digests(const TraceSet& set, std::vector<RankDigest>& ranks, RankSource& source,
                               const AnalyzeOptions& opts) {
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
  const P2PPairs pairs(ranks, set.strings, set.global_clock);
  const RankClocks clocks(ranks, set.global_clock, pairs);
  const CrossRank x{set.strings, pairs, clocks, tol_of(set)};
  r.clock_base = to_string(clocks.base());
  if (clocks.base() == ClockBase::OWN_START) {
    r.notes.push_back("the ranks' clocks could not be put on one base (no shared clock, base times or P2P pairs "
                      "linking every rank): each position (start_ms, at_ms) is relative to its own rank's first "
                      "device slice");
  }
  std::vector<P2PWait> waits;
  std::pair<int64_t, int64_t> window{INT64_MAX, INT64_MIN};
  if (opts.step) {
    r.total = step_metrics(ranks, x, *opts.step, [](RankDigest& d) { return d.total ? &*d.total : nullptr; },
                           &waits, &window);
    if (r.total.ranks.empty() && !ranks.empty()) {
      std::vector<int64_t> have;
      for (const auto& d : ranks) {
        for (const auto& s : d.steps) have.push_back(s.step);
      }
      std::sort(have.begin(), have.end());
      have.erase(std::unique(have.begin(), have.end()), have.end());
      // A trace without step markers (a simulate trace: one step) says so, not "steps []".
      throw TraceError(fmt::format("{}: --step {}: no such step marker; {}",
                                   set.sources.empty() ? "analyze" : set.sources.front(), *opts.step,
                                   have.empty() ? std::string("the traces have no step markers (analyze them without --step)")
                                                : fmt::format("the traces have steps [{}]", fmt::join(have, ", "))));
    }
  } else {
    window = {INT64_MIN, INT64_MAX};
    r.total.window = "whole trace";
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (auto& d : ranks) {
      r.total.ranks.push_back(x.finish(d, *d.total, &waits));
      r.total.span_ms = std::max(r.total.span_ms, r.total.ranks.back().span_ms);
      first = std::min(first, d.first_ns);
      last = std::max(last, d.last_ns);
    }
    if (set.global_clock && last > first) r.total.span_ms = ms(last - first);
    std::vector<int64_t> steps;
    for (const auto& d : ranks) {
      for (const auto& s : d.steps) steps.push_back(s.step);
    }
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    for (int64_t s : steps) {
      const auto of = [s](RankDigest& d) -> WindowFigures* {
        for (auto& [step, w] : d.by_step) {
          if (step == s) return &w;
        }
        return nullptr;
      };
      r.steps.push_back(step_metrics(ranks, x, s, of, nullptr, nullptr));
    }
    // With markers the whole trace is not one step: its step_time_ms is the steps' mean and the
    // span is reported as span_ms only.
    r.total.step_time_ms = r.total.span_ms;
    if (!r.steps.empty()) {
      double sum = 0;
      for (const auto& st : r.steps) sum += st.step_time_ms;
      r.total.step_time_ms = sum / static_cast<double>(r.steps.size());
      for (size_t i = 0; i < ranks.size(); ++i) {
        auto& rm = r.total.ranks[i];
        rm.step_time_ms = mean_host_step_ms(ranks[i]).value_or(rm.span_ms);
      }
    }
    set_figures(r.total, r.total.span_ms);
    r.hta_window = hta_window(ranks, x);
  }
  std::sort(waits.begin(), waits.end(),
            [](const P2PWait& a, const P2PWait& b) { return a.wait_ms > b.wait_ms; });
  if (waits.size() > 10) waits.resize(10);
  r.longest_pp_waits = std::move(waits);
  stragglers(ranks, set.strings, tolerance(set), r);
  r.chains = wait_chains(ranks, pairs, window.first, window.second, opts.chains, clocks, tolerance(set), source);
  return r;
}

}  // namespace detail

AnalysisResult analyze(const TraceSet& set, const AnalyzeOptions& opts) {
  const detail::DigestOptions d{opts.step, opts.chains, detail::tols_for(set.global_clock, true)};
  std::vector<RankDigest> ranks;
  ranks.reserve(set.ranks.size());
  for (const auto& tl : set.ranks) ranks.push_back(detail::digest_rank(tl, set.strings, d));
  detail::SetSource source(set);
  return detail::analyze_digests(set, ranks, source, opts);
}

AnalysisResult analyze_paths(const std::vector<std::string>& paths, const AnalyzeOptions& opts) {
  return detail::analyze_streaming(paths, opts, detail::reader_threads(), nullptr);
}

}  // namespace ppstream::analyze
