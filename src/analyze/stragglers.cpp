// Stragglers across ranks: collective instances matched by (group, ordinal), each member's
// arrival lag, the per-group slow-rank table and the chain "rank X waited at op Y for rank Z"
// (definitions: docs/analyze.md "Stragglers").
#include "stragglers.h"

#include <algorithm>
#include <map>
#include <set>

namespace ppstream::analyze::detail {
namespace {

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

using Key = std::pair<uint32_t, int64_t>;  // (group, ordinal)

// The instances: the k-th op of each group (RankDigest::collectives) on every rank, members in
// rank order.
std::map<Key, std::vector<Arrival>> instances(const std::vector<RankDigest>& ranks) {
  std::map<Key, std::vector<Arrival>> out;
  for (const auto& d : ranks) {
    for (const auto& [g, ops] : d.collectives) {
      for (size_t k = 0; k < ops.size(); ++k) out[{g, static_cast<int64_t>(k)}].push_back(ops[k]);
    }
  }
  for (auto it = out.begin(); it != out.end();) it = it->second.size() < 2 ? out.erase(it) : std::next(it);
  return out;
}

int64_t dur(const Arrival& a) { return a.end_ns - a.start_ns; }

// The member with the longest duration arrived first; the shortest, last.
std::pair<const Arrival*, const Arrival*> first_last(const std::vector<Arrival>& v) {
  auto [lo, hi] = std::minmax_element(v.begin(), v.end(), [](const Arrival& a, const Arrival& b) {
    return dur(a) != dur(b) ? dur(a) < dur(b) : a.rank.v > b.rank.v;
  });
  return {&*hi, &*lo};
}

// The collective instance rank `r` was in right before `before_ns` (its end at most `tol` after).
const std::pair<const Key, std::vector<Arrival>>* previous(const std::map<Key, std::vector<Arrival>>& inst, Rank r,
                                                         int64_t before_ns, const Key& not_key, int64_t tol) {
  const std::pair<const Key, std::vector<Arrival>>* best = nullptr;
  int64_t best_end = INT64_MIN;
  for (const auto& kv : inst) {
    if (kv.first == not_key) continue;
    for (const auto& a : kv.second) {
      if (a.rank == r && a.end_ns <= before_ns + tol && a.end_ns > best_end) {
        best = &kv;
        best_end = a.end_ns;
      }
    }
  }
  return best;
}

}  // namespace

void stragglers(const std::vector<RankDigest>& ranks, const StringTable& strings, int64_t tol, AnalysisResult& r) {
  const auto inst = instances(ranks);
  std::map<std::pair<uint32_t, int32_t>, SlowRank> slow;
  const std::pair<const Key, std::vector<Arrival>>* worst = nullptr;
  int64_t worst_skew = -1;
  for (const auto& kv : inst) {
    const auto& [key, members] = kv;
    auto [first, last] = first_last(members);
    const int64_t skew = dur(*first) - dur(*last);
    r.skews.push_back(CollectiveSkew{strings.str(key.first), strings.str(first->name), key.second,
                                     members.size(), first->rank, last->rank, ms(skew)});
    if (skew > worst_skew) {
      worst_skew = skew;
      worst = &kv;
    }
    for (const auto& a : members) {
      auto& sr = slow[{key.first, a.rank.v}];
      sr.group = strings.str(key.first);
      sr.rank = a.rank;
      ++sr.instances;
      sr.late_ms += ms(dur(*first) - dur(a));
      if (&a == last) {
        ++sr.last;
        sr.caused_wait_ms += ms(skew);
      }
    }
  }
  std::sort(r.skews.begin(), r.skews.end(), [](const CollectiveSkew& a, const CollectiveSkew& b) { return a.skew_ms > b.skew_ms; });
  if (r.skews.size() > 10) r.skews.resize(10);
  for (auto& [k, v] : slow) r.slow_ranks.push_back(v);
  std::stable_sort(r.slow_ranks.begin(), r.slow_ranks.end(), [](const SlowRank& a, const SlowRank& b) {
    return a.group != b.group ? a.group < b.group : a.caused_wait_ms > b.caused_wait_ms;
  });
  // The chain: the first arriver of the worst instance waited for its last; the last arrived late
  // because it was waiting in its previous collective for that one's last arriver, and so on.
  std::set<Key> seen;
  const auto* cur = worst;
  Rank waiter = worst ? first_last(worst->second).first->rank : Rank(0);
  while (cur && r.straggler_chain.size() < 8 && seen.insert(cur->first).second) {
    const Arrival* last = first_last(cur->second).second;
    auto mine = std::find_if(cur->second.begin(), cur->second.end(), [&](const Arrival& a) { return a.rank == waiter; });
    if (mine == cur->second.end()) break;
    const int64_t wait = dur(*mine) - dur(*last);
    if (last->rank == waiter || wait <= tol) break;  // it arrived last there: its lateness is its own
    r.straggler_chain.push_back(StragglerLink{waiter, strings.str(cur->first.first), strings.str(mine->name),
                                              cur->first.second, last->rank, ms(wait)});
    waiter = last->rank;
    cur = previous(inst, waiter, last->start_ns, cur->first, tol);
  }
}

}  // namespace ppstream::analyze::detail
