// The cross-rank PP wait chain: from the longest stream waits, back through P2P matches to the
// rank and cause where the delay started (algorithm: docs/analyze.md "Wait chain").
#pragma once

#include <optional>
#include <vector>

#include "p2p_pairs.h"
#include "ppstream/analyze/analyze.h"

namespace ppstream::analyze::detail {

// The rank's compute stream: the one named "compute", else the one with the most compute time.
uint32_t compute_stream(const RankTimeline& tl);

// Matching tolerance in ns: 1 µs on a global clock, 20 µs when clocks are aligned per pair.
int64_t tolerance(const TraceSet& set);

// Index of the slice on another stream of `tl` that ended last in [begin, t + tol] (ties within
// tol: P2P > collective > stream wait > compute): what released a wait ending at `t`.
std::optional<size_t> releaser(const RankTimeline& tl, uint32_t not_stream, int64_t begin, int64_t t,
                               int64_t tol);

// Chains for the `count` longest waits on the ranks' compute streams (all streams' waits when
// no compute stream waits) starting in [lo, hi); times relative to `origin`.
// Receives are paired with sends by `pairs`.
std::vector<WaitChain> wait_chains(const TraceSet& set, const P2PPairs& pairs, int64_t lo, int64_t hi,
                                   size_t count, int64_t origin);

// Which slices of a rank a metric covers: all, or those of the chosen steps (Slice::step).
struct StepSelection {
  const std::vector<bool>* steps = nullptr;  // by index into RankTimeline::steps; null: every slice
  const StepMarker* marker = nullptr;        // one step: its marker (host step time)
  bool contains(const Slice& s) const { return steps == nullptr || (s.step && (*steps)[*s.step]); }
};

// pp_wait_ms per receiving P2P slice = matched − start (`pairs`), its whole duration when unpaired.
RankMetrics rank_metrics(const TraceSet& set, const P2PPairs& pairs, const RankTimeline& tl, const StepSelection& sel,
                         std::vector<P2PWait>* waits, int64_t origin);

}  // namespace ppstream::analyze::detail
