// Full rank timelines after the reading: in memory, or re-read from the rank's file (rank_source.h).
#include "rank_source.h"

#include <fmt/format.h>

#include <algorithm>

#include "ppstream/analyze/readers.h"

namespace ppstream::analyze::detail {
namespace {

const RankTimeline* find_rank(const TraceSet& set, Rank r) {
  auto it = std::lower_bound(set.ranks.begin(), set.ranks.end(), r,
                             [](const RankTimeline& tl, Rank x) { return tl.rank < x; });
  if (it != set.ranks.end() && it->rank == r) return &*it;
  return nullptr;
}

}  // namespace

void ResidentRanks::add(size_t n) {
  const size_t now = now_ += n;
  size_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
}

void ResidentRanks::remove(size_t n) { now_ -= n; }

RankView SetSource::view(Rank r) {
  const RankTimeline* tl = find_rank(set_, r);
  if (!tl) throw std::logic_error(fmt::format("analyze: rank {} is not in the set", r.v));
  return RankView{tl, &set_.strings, nullptr};
}

std::shared_ptr<const TraceSet> RereadSource::read(const RankDigest& d) {
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->first == d.source) {
      cache_.splice(cache_.begin(), cache_, it);
      return cache_.front().second;
    }
  }
  auto fresh = std::make_unique<TraceSet>();
  read_chrome_trace(d.source, *fresh);
  ++rereads_;
  const size_t n = fresh->ranks.size();
  if (resident_) resident_->add(n);
  ResidentRanks* resident = resident_;
  std::shared_ptr<const TraceSet> set(fresh.release(), [resident, n](const TraceSet* s) {
    delete s;
    if (resident) resident->remove(n);
  });
  cache_.emplace_front(d.source, set);
  if (cache_.size() > kCachedFiles) cache_.pop_back();
  return set;
}

RankView RereadSource::view(Rank r) {
  auto it = std::lower_bound(ranks_.begin(), ranks_.end(), r, [](const RankDigest& d, Rank x) { return d.rank < x; });
  if (it == ranks_.end() || it->rank != r) throw std::logic_error(fmt::format("analyze: rank {} is not in the set", r.v));
  if (!it->freed) return SetSource(set_).view(r);
  auto set = read(*it);
  const RankTimeline* tl = find_rank(*set, r);
  if (!tl || tl->slices.size() != it->slices || digest_rank_bounds(*tl) != std::pair{it->first_ns, it->last_ns}) {
    throw TraceError(fmt::format("{}: changed while it was analyzed: rank {} had {} slices, read again {}; expected "
                                 "the same file",
                                 it->source, r.v, it->slices, tl ? tl->slices.size() : 0));
  }
  return RankView{tl, &set->strings, set};
}

}  // namespace ppstream::analyze::detail
