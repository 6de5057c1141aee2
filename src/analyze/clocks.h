// Positions on one base: every at_ms / start_ms of one analysis is a time of one common clock,
// in ms after the set's origin, whichever rank's clock it was read on (docs/analyze.md "Positions").
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "p2p_pairs.h"
#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze::detail {

// How the ranks' clocks were put on one base, tried in this order:
enum class ClockBase : uint8_t {
  GLOBAL,     // the traces share one clock (our simulator: otherData.ppstream.clock "global")
  BASE_TIME,  // every rank's trace gives its producer's base time (Kineto baseTimeNanoseconds)
  P2P,        // aligned by P2P send/receive pairs (P2PPairs::channel_shifts), every rank reached
  OWN_START,  // none of these: each rank's positions are relative to its own first device slice
};
const char* to_string(ClockBase b);  // "global", "base_time", "p2p", "own_start"

class RankClocks {
 public:
  // `ranks` sorted by rank; `global_clock` as TraceSet::global_clock.
  RankClocks(const std::vector<RankDigest>& ranks, bool global_clock, const P2PPairs& pairs);
  // `t_ns` on rank `r`'s clock as ms after the origin of the common base (>= 0 for every slice).
  double at_ms(Rank r, int64_t t_ns) const;
  ClockBase base() const { return base_; }

 private:
  ClockBase base_ = ClockBase::GLOBAL;
  std::map<int32_t, int64_t> offset_;  // ns added to a time of rank r to place it on the common clock
  int64_t origin_ = 0;                 // earliest device slice start on the common clock
};

}  // namespace ppstream::analyze::detail
