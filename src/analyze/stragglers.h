// Straggler analysis over collective instances seen on several ranks (docs/analyze.md "Stragglers").
#pragma once

#include <optional>

#include "chain.h"
#include "rank_digest.h"
#include "ppstream/analyze/analyze.h"

namespace ppstream::analyze::detail {

// Fills r.skews, r.slow_ranks and r.straggler_chain from the ranks' collectives (RankDigest::
// collectives: of the --step only when given), `ranks` sorted by rank, names ids of `strings`,
// `tol` the set's clock tolerance (chain.h).
void stragglers(const std::vector<RankDigest>& ranks, const StringTable& strings, int64_t tol, AnalysisResult& r);

}  // namespace ppstream::analyze::detail
