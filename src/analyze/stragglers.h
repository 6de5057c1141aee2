// Straggler analysis over collective instances seen on several ranks (docs/analyze.md "Stragglers").
#pragma once

#include <optional>

#include "chain.h"
#include "ppstream/analyze/analyze.h"

namespace ppstream::analyze::detail {

// Fills r.skews, r.slow_ranks and r.straggler_chain from the collectives of `set` (of step
// `step` only when given).
void stragglers(const TraceSet& set, std::optional<int64_t> step, AnalysisResult& r);

}  // namespace ppstream::analyze::detail
