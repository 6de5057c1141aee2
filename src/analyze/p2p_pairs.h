// Pairs every P2P op with its peer's mirror op per channel (sender, receiver, phase), in FIFO
// order of ops (docs/semantics.md), and maps the peer's clock onto each rank's for the pair.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze::detail {

// One op of one P2P slice.
struct OpRef {
  const RankTimeline* tl = nullptr;
  size_t slice = 0;  // index into tl->slices
  size_t part = 0;   // index into the slice's p2p
  const Slice& s() const { return tl->slices[slice]; }
};

// The pairing of all P2P ops of a trace set. Ops with mb/stage (our traces) pair with their
// mirror (SEND_F mb s ↔ RECV_F mb s+1, SEND_B mb s ↔ RECV_B mb s-1), the k-th of each with the
// k-th; the constructor throws TraceError naming both pairs when two sends on one stream are
// received in the opposite order on one stream (FIFO broken). Ops without mb/stage (Kineto,
// Ascend) pair in start order per (sender, receiver, phase).
class P2PPairs {
 public:
  explicit P2PPairs(const TraceSet& set);

  // The peer's op paired with part `part` of slice `slice` of `tl`; absent when unmatched.
  std::optional<OpRef> peer(const RankTimeline& tl, size_t slice, size_t part) const;
  // ns to add to a time on `from`'s clock to place it on `to`'s clock: 0 on a global clock,
  // else the median of (recv end − send end) over the channel's pairs (both wait for the data).
  int64_t clock_shift(Rank from, Rank to, char phase) const;
  // Every channel's shift as (sender, receiver, ns to add to a sender's time to place it on the
  // receiver's clock); empty with a global clock.
  std::vector<std::tuple<int32_t, int32_t, int64_t>> channel_shifts() const;
  // When slice `slice` of `tl` was matched, on tl's clock: the later of its start and every
  // paired peer op's start (a BATCH completes only when all its ops are matched, as in the
  // simulator). Absent when none of its ops is paired.
  std::optional<int64_t> matched_ns(const RankTimeline& tl, size_t slice) const;

 private:
  using Channel = std::tuple<int32_t, int32_t, char>;  // (sender, receiver, phase)
  bool global_ = false;
  std::map<std::pair<int32_t, size_t>, std::vector<std::optional<OpRef>>> peers_;  // (rank, slice)
  std::map<Channel, int64_t> offset_;  // receiver clock − sender clock
};

}  // namespace ppstream::analyze::detail
