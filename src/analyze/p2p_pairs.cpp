// Per-channel FIFO pairing of P2P ops; see p2p_pairs.h.
#include "p2p_pairs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ppstream/program/format.h"

namespace ppstream::analyze::detail {
namespace {

const P2POp& op_of(const OpRef& r) { return *r.s().p2p[r.part].op; }

bool has_ops(const std::vector<OpRef>& v) {
  return std::all_of(v.begin(), v.end(), [](const OpRef& r) { return r.s().p2p[r.part].op.has_value(); });
}

// Our traces: the k-th send of an op ↔ the k-th receive of its mirror (k > 0 only when a trace
// holds several steps). A channel's ops may run on several streams of a rank (VPP), whose
// slices start out of program order, so start order alone cannot pair them; the ops' mb and
// stage can.
std::vector<std::pair<size_t, size_t>> pair_by_op(const std::vector<OpRef>& sv, const std::vector<OpRef>& rv) {
  std::map<P2POp, std::vector<size_t>> waiting;  // receive op → its positions in rv, in order
  for (size_t j = 0; j < rv.size(); ++j) waiting[op_of(rv[j])].push_back(j);
  std::map<P2POp, size_t> used;
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < sv.size(); ++i) {
    const P2POp want = mirror_of(op_of(sv[i]), sv[i].rank->rank);
    auto it = waiting.find(want);
    size_t& n = used[want];
    if (it == waiting.end() || n >= it->second.size()) continue;  // its receive is outside the trace
    out.emplace_back(i, it->second[n++]);
  }
  return out;
}

// FIFO per channel holds within what a trace orders: two sends on one sender stream that go to
// one receiver stream must be received in the order they were sent.
void check_fifo(const StringTable& strings, const std::tuple<int32_t, int32_t, char>& ch, const std::vector<OpRef>& sv,
                const std::vector<OpRef>& rv, const std::vector<std::pair<size_t, size_t>>& matched) {
  std::map<std::pair<uint32_t, uint32_t>, std::pair<size_t, size_t>> last;  // streams → last pair
  for (auto [i, j] : matched) {
    const auto key = std::pair{sv[i].s().stream, rv[j].s().stream};
    auto it = last.find(key);
    if (it != last.end() && it->second.second > j) {
      const OpRef& s0 = sv[it->second.first];
      const OpRef& r0 = rv[it->second.second];
      const OpRef& s1 = sv[i];
      const OpRef& r1 = rv[j];
      throw TraceError(fmt::format(
          "{}: P2P channel r{}->r{} ({}): r{} sent '{}' ('{}') before '{}' ('{}') on stream {}, but r{} "
          "received '{}' ('{}') before '{}' ('{}') on stream {}: the traces' per-channel op order is "
          "inconsistent with FIFO matching",
          r1.rank->source, std::get<0>(ch), std::get<1>(ch), std::get<2>(ch), s0.rank->rank.v, to_text(op_of(s0)),
          strings.str(s0.s().name), to_text(op_of(s1)), strings.str(s1.s().name), s0.rank->streams[s0.s().stream],
          r0.rank->rank.v, to_text(op_of(r1)), strings.str(r1.s().name), to_text(op_of(r0)),
          strings.str(r0.s().name), r0.rank->streams[r0.s().stream]));
    }
    last[key] = {i, j};
  }
}

}  // namespace

P2PPairs::P2PPairs(const std::vector<RankDigest>& ranks, const StringTable& strings, bool global_clock)
    : global_(global_clock) {
  std::map<Channel, std::vector<OpRef>> sends, recvs;
  for (const auto& d : ranks) {
    for (size_t i = 0; i < d.p2p.size(); ++i) {
      const auto& parts = d.p2p[i].p2p;
      if (!parts.empty()) peers_[{d.rank.v, d.p2p[i].index}].resize(parts.size());
      for (size_t k = 0; k < parts.size(); ++k) {
        const P2PPart& p = parts[k];
        if (p.dir == P2PDir::SEND) sends[{d.rank.v, p.peer.v, p.phase}].push_back({&d, i, k});
        else recvs[{p.peer.v, d.rank.v, p.phase}].push_back({&d, i, k});
      }
    }
  }
  for (const auto& [ch, sv] : sends) {
    auto it = recvs.find(ch);
    if (it == recvs.end()) continue;
    const auto& rv = it->second;
    std::vector<std::pair<size_t, size_t>> matched;  // (index in sv, index in rv)
    if (has_ops(sv) && has_ops(rv)) {
      matched = pair_by_op(sv, rv);
      check_fifo(strings, ch, sv, rv, matched);
    } else {
      for (size_t n = 0; n < std::min(sv.size(), rv.size()); ++n) matched.emplace_back(n, n);
    }
    std::vector<int64_t> d;
    for (auto [i, j] : matched) {
      const OpRef& snd = sv[i];
      const OpRef& rcv = rv[j];
      peers_[{snd.rank->rank.v, snd.s().index}][snd.part] = rcv;
      peers_[{rcv.rank->rank.v, rcv.s().index}][rcv.part] = snd;
      d.push_back(rcv.s().end_ns() - snd.s().end_ns());
    }
    if (!global_ && !d.empty()) {
      std::nth_element(d.begin(), d.begin() + static_cast<long>(d.size() / 2), d.end());
      offset_[ch] = d[d.size() / 2];
    }
  }
}

std::optional<OpRef> P2PPairs::peer(Rank r, size_t slice, size_t part) const {
  auto it = peers_.find({r.v, slice});
  if (it == peers_.end() || part >= it->second.size()) return std::nullopt;
  return it->second[part];
}

int64_t P2PPairs::clock_shift(Rank from, Rank to, char phase) const {
  if (global_) return 0;
  if (auto it = offset_.find({from.v, to.v, phase}); it != offset_.end()) return it->second;
  if (auto it = offset_.find({to.v, from.v, phase}); it != offset_.end()) return -it->second;
  return 0;
}

std::vector<std::tuple<int32_t, int32_t, int64_t>> P2PPairs::channel_shifts() const {
  std::vector<std::tuple<int32_t, int32_t, int64_t>> out;
  if (global_) return out;
  for (const auto& [ch, o] : offset_) out.emplace_back(std::get<0>(ch), std::get<1>(ch), o);
  return out;
}

std::optional<int64_t> P2PPairs::matched_ns(Rank r, const P2PRecord& s) const {
  std::optional<int64_t> m;
  for (size_t k = 0; k < s.p2p.size(); ++k) {
    auto q = peer(r, s.index, k);
    if (!q) continue;
    const int64_t t = q->s().start_ns + clock_shift(q->rank->rank, r, s.p2p[k].phase);
    m = std::max(m.value_or(s.start_ns), std::max(s.start_ns, t));
  }
  return m;
}

}  // namespace ppstream::analyze::detail
