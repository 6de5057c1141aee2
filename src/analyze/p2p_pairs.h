// Pairs every P2P op with its peer's mirror op per channel (sender, receiver, phase), in FIFO
// order of ops (docs/semantics.md), and maps the peer's clock onto each rank's for the pair.
// Reads the ranks' digests (rank_digest.h: every P2P slice is kept there), not their timelines.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "rank_digest.h"

namespace ppstream::analyze::detail {

// One op of one P2P slice.
struct OpRef {
  const RankDigest* rank = nullptr;
  size_t record = 0;  // index into rank->p2p
  size_t part = 0;    // index into the slice's p2p
  const P2PRecord& s() const { return rank->p2p[record]; }
};

// The pairing of all P2P ops of a trace set. Ops with mb/stage (our traces) pair with their
// mirror (SEND_F mb s ↔ RECV_F mb s+1, SEND_B mb s ↔ RECV_B mb s-1), the k-th of each with the
// k-th; the constructor throws TraceError naming both pairs when two sends on one stream are
// received in the opposite order on one stream (FIFO broken). Ops without mb/stage (Kineto,
// Ascend) pair in start order per (sender, receiver, phase).
class P2PPairs {
 public:
  // `ranks` sorted by rank (the set's order); names are ids of `strings`; `global_clock` as
  // TraceSet::global_clock. Keeps pointers into `ranks`.
  P2PPairs(const std::vector<RankDigest>& ranks, const StringTable& strings, bool global_clock);

  // The peer's op paired with part `part` of slice `slice` (index into the rank's slices) of rank
  // `r`; absent when unmatched.
  std::optional<OpRef> peer(Rank r, size_t slice, size_t part) const;
  // ns to add to a time on `from`'s clock to place it on `to`'s clock: 0 on a global clock,
  // else the median of (recv end − send end) over the channel's pairs (both wait for the data).
  int64_t clock_shift(Rank from, Rank to, char phase) const;
  // Every channel's shift as (sender, receiver, ns to add to a sender's time to place it on the
  // receiver's clock); empty with a global clock.
  std::vector<std::tuple<int32_t, int32_t, int64_t>> channel_shifts() const;
  // When P2P slice `p` of rank `r` was matched, on r's clock: the later of its start and every
  // paired peer op's start (a BATCH completes only when all its ops are matched, as in the
  // simulator). Absent when none of its ops is paired.
  std::optional<int64_t> matched_ns(Rank r, const P2PRecord& p) const;

 private:
  using Channel = std::tuple<int32_t, int32_t, char>;  // (sender, receiver, phase)
  bool global_ = false;
  std::map<std::pair<int32_t, size_t>, std::vector<std::optional<OpRef>>> peers_;  // (rank, slice index)
  std::map<Channel, int64_t> offset_;  // receiver clock − sender clock
};

}  // namespace ppstream::analyze::detail
