// The cross-rank PP wait chain: from the longest stream waits, back through P2P matches to the
// rank and cause where the delay started (algorithm: docs/analyze.md "Wait chain").
#pragma once

#include <optional>
#include <vector>

#include "clocks.h"
#include "p2p_pairs.h"
#include "rank_source.h"
#include "ppstream/analyze/analyze.h"

namespace ppstream::analyze::detail {

// The rank's compute stream: the one named "compute", else the one with the most compute time.
uint32_t compute_stream(const RankTimeline& tl);

// How far apart two times may be and still be "the same moment" when the analyzer matches a
// slice's end with another's end or start: the releaser of a wait (so reduce_exposed_ms), the
// queue before a slice, whether a send was late (docs/analyze.md "Wait chain").
// One clock (our simulator; our runtime with clock "global"): equal times differ only by the
// writers' rounding (µs printed with 3 decimals), so 1 µs is a wide margin (1 ns gives the same
// figures on the simulated samples) that is still far below any instruction's duration.
inline constexpr int64_t kGlobalClockTolNs = 1'000;
// Per-rank clocks (vendor profiles): a stream wait ends some µs after the task that released it
// on another stream (the device signals the event, then the waiting stream resumes), and a
// peer's times are moved onto the waiter's clock by a median shift with its own error. On
// msinsight-level0 the compute stream's waits end 5–20 µs after the all-reduces that release
// them (at 5 or 10 µs the longest wait's chain loses its all-reduce); 20 µs is still far below
// the kernels the chains are about.
inline constexpr int64_t kPerRankClockTolNs = 20'000;
// kGlobalClockTolNs when the set shares one clock, else kPerRankClockTolNs.
int64_t tolerance(const TraceSet& set);

// Index of the slice on another stream of `tl` that ended last in [begin, t + tol] (ties within
// tol: P2P > collective > stream wait > compute): what released a wait ending at `t`.
std::optional<size_t> releaser(const RankTimeline& tl, uint32_t not_stream, int64_t begin, int64_t t,
                               int64_t tol);

// What released stream wait `wait` (a STREAM_WAIT slice of `tl`), and by which rule
// (docs/analyze.md "Wait chain"): by its WaitSource where the trace has one — the last slice
// launched on the recorded stream before the cudaEventRecord call (RECORD), else the last slice
// of the recorded stream ending in [wait start, wait end + tol] (STREAM) — and only where the
// trace says neither, releaser() over every other stream (TIMING).
struct WaitRelease {
  std::optional<size_t> slice;  // index into tl.slices; absent: the cause is not in the trace
  WaitRule rule = WaitRule::TIMING;
};
WaitRelease wait_releaser(const RankTimeline& tl, size_t wait, int64_t tol);

// Chains for the `count` longest waits on the ranks' compute streams (all streams' waits when
// no compute stream waits) starting in [lo, hi), from the ranks' candidates (RankDigest::waits,
// `ranks` sorted by rank; the longest first, then by rank, then by slice index); positions by
// `clocks`, receives paired with sends by `pairs`, `tol` the set's tolerance. The walk reads the
// full timelines of the ranks it visits from `source`.
std::vector<WaitChain> wait_chains(const std::vector<RankDigest>& ranks, const P2PPairs& pairs, int64_t lo,
                                   int64_t hi, size_t count, const RankClocks& clocks, int64_t tol,
                                   RankSource& source);

}  // namespace ppstream::analyze::detail
