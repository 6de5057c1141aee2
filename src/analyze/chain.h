// The cross-rank PP wait chain: from the longest stream waits, back through P2P matches to the
// rank and cause where the delay started (algorithm: docs/analyze.md "Wait chain").
#pragma once

#include <vector>

#include "ppstream/analyze/analyze.h"

namespace ppstream::analyze::detail {

// Chains for the `count` longest stream waits starting in [lo, hi); times relative to `origin`.
std::vector<WaitChain> wait_chains(const TraceSet& set, int64_t lo, int64_t hi, size_t count,
                                   int64_t origin);

RankMetrics rank_metrics(const TraceSet& set, const RankTimeline& tl, int64_t lo, int64_t hi,
                         const StepMarker* marker, std::vector<P2PWait>* waits, int64_t origin);

}  // namespace ppstream::analyze::detail
