// Ranks of Megatron timer workers over the job's files (mappers.h, docs/analyze.md "Inputs and the
// timeline model"): a file numbers its workers by its own DP and TP counts; once every file is read
// they are numbered by the job's, so a job split into one file per DP rank gets the ranks of the
// job's one file.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "mappers.h"
#include "rank_digest.h"

namespace ppstream::analyze::detail {

Rank timer_worker_rank(const RankTimeline::TimerWorker& w, int32_t dp, int32_t tp, const std::string& path) {
  const int64_t rank = (int64_t{w.pp_rank} * dp + w.dp_rank) * tp + w.tp_rank;
  if (rank > std::numeric_limits<int32_t>::max()) {
    throw TraceError(fmt::format("{}: PP rank {} x {} DP ranks x {} TP ranks is beyond int32 ranks", path, w.pp_rank,
                                 dp, tp));
  }
  return Rank(static_cast<int32_t>(rank));
}

void number_timer_workers(TraceSet& set, std::vector<RankDigest>* digests) {
  int32_t dp = 0, tp = 0;
  for (const RankTimeline& tl : set.ranks) {
    if (tl.timer_worker) dp = std::max(dp, tl.timer_worker->dp_rank + 1), tp = std::max(tp, tl.timer_worker->tp_rank + 1);
  }
  if (dp == 0) return;
  set.timer_dp = dp;
  set.timer_tp = tp;
  std::map<std::tuple<int32_t, int32_t, int32_t>, const RankTimeline*> seen;  // worker → its timeline
  std::map<std::pair<std::string, int32_t>, Rank> renamed;                    // (file, its rank) → job rank
  for (RankTimeline& tl : set.ranks) {
    if (!tl.timer_worker) continue;
    const auto& w = *tl.timer_worker;
    const auto [it, fresh] = seen.try_emplace({w.dp_rank, w.pp_rank, w.tp_rank}, &tl);
    if (!fresh) {
      throw TraceError(fmt::format("{}: DP rank {}, stage {}, TP rank {} is already loaded from {}; expected one "
                                   "trace per worker",
                                   tl.source, w.dp_rank, w.pp_rank, w.tp_rank, it->second->source));
    }
    const Rank r = timer_worker_rank(w, dp, tp, tl.source);
    if (r != tl.rank) renamed.emplace(std::pair{tl.source, tl.rank.v}, r);
    tl.rank = r;
  }
  std::stable_sort(set.ranks.begin(), set.ranks.end(),
                   [](const RankTimeline& a, const RankTimeline& b) { return a.rank < b.rank; });
  for (size_t i = 1; i < set.ranks.size(); ++i) {
    if (set.ranks[i].rank == set.ranks[i - 1].rank) {
      throw TraceError(fmt::format("{}: rank {} is already loaded from {}; expected one trace per rank",
                                   set.ranks[i].source, set.ranks[i].rank.v, set.ranks[i - 1].source));
    }
  }
  if (!digests || renamed.empty()) return;
  // A digest's ranks: its own, its windows' and its collectives' (Megatron P2P ops name no peer).
  for (RankDigest& d : *digests) {
    const auto it = renamed.find({d.source, d.rank.v});
    if (it == renamed.end()) continue;
    const Rank r = it->second;
    d.rank = r;
    if (d.total) d.total->m.rank = r;
    if (d.hta) d.hta->m.rank = r;
    for (auto& [step, w] : d.by_step) w.m.rank = r;
    for (GroupOps& g : d.collectives)
      for (Arrival& a : g.ops) a.rank = r;
  }
}

}  // namespace ppstream::analyze::detail
