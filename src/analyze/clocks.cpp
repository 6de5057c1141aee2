// Puts every rank's clock on one base (rules: clocks.h, docs/analyze.md "Positions").
#include "clocks.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <tuple>
#include <vector>

namespace ppstream::analyze::detail {
namespace {

// Offsets from P2P pairs: rank r's time + offset[r] is the lowest rank's clock of its connected
// set (breadth-first over channels, the lowest-numbered channel first); false when a rank is
// not reached.
bool p2p_offsets(const std::vector<RankDigest>& ranks, const P2PPairs& pairs, std::map<int32_t, int64_t>& offset) {
  if (ranks.empty()) return true;
  std::multimap<int32_t, std::pair<int32_t, int64_t>> edges;  // rank → (peer, ns from rank's clock to peer's)
  for (const auto& [snd, rcv, shift] : pairs.channel_shifts()) {
    edges.emplace(snd, std::pair{rcv, shift});
    edges.emplace(rcv, std::pair{snd, -shift});
  }
  std::deque<int32_t> todo{ranks.front().rank.v};
  offset[ranks.front().rank.v] = 0;
  while (!todo.empty()) {
    const int32_t r = todo.front();
    todo.pop_front();
    auto [lo, hi] = edges.equal_range(r);
    for (auto it = lo; it != hi; ++it) {
      const auto [peer, shift] = it->second;
      if (offset.count(peer)) continue;
      // t_peer = t_r + shift, so t_peer + offset[peer] = t_r + offset[r].
      offset[peer] = offset[r] - shift;
      todo.push_back(peer);
    }
  }
  return std::all_of(ranks.begin(), ranks.end(), [&](const RankDigest& d) { return offset.count(d.rank.v) > 0; });
}

}  // namespace

const char* to_string(ClockBase b) {
  switch (b) {
    case ClockBase::GLOBAL: return "global";
    case ClockBase::BASE_TIME: return "base_time";
    case ClockBase::P2P: return "p2p";
    case ClockBase::OWN_START: return "own_start";
  }
  return "?";
}

RankClocks::RankClocks(const std::vector<RankDigest>& ranks, bool global_clock, const P2PPairs& pairs) {
  const bool all_base = !ranks.empty() && std::all_of(ranks.begin(), ranks.end(),
                                                      [](const RankDigest& d) { return d.base_ns.has_value(); });
  if (global_clock || ranks.size() <= 1) {
    base_ = ClockBase::GLOBAL;
  } else if (all_base) {
    base_ = ClockBase::BASE_TIME;
    const int64_t lowest = std::min_element(ranks.begin(), ranks.end(), [](const auto& a, const auto& b) {
                             return *a.base_ns < *b.base_ns;
                           })->base_ns.value();
    for (const auto& d : ranks) offset_[d.rank.v] = *d.base_ns - lowest;
  } else if (p2p_offsets(ranks, pairs, offset_)) {
    base_ = ClockBase::P2P;
  } else {
    base_ = ClockBase::OWN_START;
    offset_.clear();
    for (const auto& d : ranks) offset_[d.rank.v] = -d.first_start_ns.value_or(0);
  }
  int64_t o = std::numeric_limits<int64_t>::max();
  for (const auto& d : ranks) {
    if (auto f = d.first_start_ns) o = std::min(o, *f + offset_[d.rank.v]);
  }
  origin_ = o == std::numeric_limits<int64_t>::max() ? 0 : o;
}

double RankClocks::at_ms(Rank r, int64_t t_ns) const {
  auto it = offset_.find(r.v);
  const int64_t off = it == offset_.end() ? 0 : it->second;
  return static_cast<double>(t_ns + off - origin_) / 1e6;
}

}  // namespace ppstream::analyze::detail
