// Lifting rules (docs/whatif.md "Lifting"): from DP rank 0's first step, per stage —
//  1. forward/backward compute run in one chain, in start order;
//  2. each P2P lane (forward-send, forward-recv, backward-send, backward-recv) is a chain; a send
//     follows the compute whose output it carries, a receive precedes the compute that consumes
//     it and follows that compute's predecessor of the same kind; sends/receives that carry no
//     data (before the first / after the last compute of their kind, or past the model's first /
//     last chunk) communicate alone; the others pair with the peer stage's op of the mirror type
//     and the same rank among data-carrying ops;
//  3. the first backward send/receive wait for the second forward before the first backward;
//  4. with DP > 1: params-all-gather and grads-reduce-scatter share one chain; a chunk's first
//     forward waits for its (last) all-gather; with separate-grads-all-reduce (overlapped
//     reduction) a chunk's first reduce-scatter waits for its last backward;
//  5. after the last compute: gc → layernorm all-reduce → embedding all-reduce (first and last
//     stage) → [reduce-scatters, when not overlapped | separate all-reduce] → clip → optimizer;
//  6. communication groups: P2P pairs; DP collectives across the DP ranks; the embedding
//     all-reduce across the first and last stage; clip's norm all-reduce across every worker.
// The same dependency structure as the artifact's dependency_model.py, derived independently.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <optional>
#include <tuple>

#include "graph.h"
#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {
namespace {

constexpr double kP2PEpsMs = 0.05;  // clock tolerance when telling no-data P2P ops (the artifact's 5e-5 s)

struct Lifter {
  const Job& job;
  std::vector<std::string>& notes;
  Placement placement;
  Graph g;
  std::vector<std::vector<std::vector<int32_t>>> by_type;  // [stage][type] → ops by seq

  double st(int32_t k) const { return job.start_ms[job.at(k, 0)]; }
  double en(int32_t k) const { return st(k) + job.dur_ms[job.at(k, 0)]; }
  const TemplateOp& op(int32_t k) const { return job.ops[static_cast<size_t>(k)]; }
  std::string where(int32_t k) const { return job.where(k, 0); }

  std::optional<int32_t> find(int32_t stage, OpType t, int32_t seq) const {
    for (int32_t k : by_type[static_cast<size_t>(stage)][static_cast<size_t>(t)]) {
      if (op(k).seq == seq) return k;
    }
    return std::nullopt;
  }
  // Ops in start order, ties by seq then type name (the artifact's sort).
  void sort_by_start(std::vector<int32_t>& ks) const {
    std::stable_sort(ks.begin(), ks.end(), [&](int32_t a, int32_t b) {
      return std::make_tuple(st(a), op(a).seq, name_of(op(a).type)) < std::make_tuple(st(b), op(b).seq, name_of(op(b).type));
    });
  }
  std::vector<int32_t> of_types(int32_t stage, std::initializer_list<OpType> ts) const {
    std::vector<int32_t> out;
    for (OpType t : ts) {
      const auto& v = by_type[static_cast<size_t>(stage)][static_cast<size_t>(t)];
      out.insert(out.end(), v.begin(), v.end());
    }
    sort_by_start(out);
    return out;
  }
  void dep(int32_t v, int32_t u) { g.deps[static_cast<size_t>(v)].push_back(u); }
  void chain(const std::vector<int32_t>& ks) {
    for (size_t i = 1; i < ks.size(); ++i) dep(ks[i], ks[i - 1]);
  }
  int32_t add_group(std::vector<int32_t> members, bool sync) {
    const auto id = static_cast<int32_t>(g.groups.size());
    for (int32_t m : members) {
      if (g.group[static_cast<size_t>(m)] >= 0) throw LiftError(fmt::format("{}: in two communication groups", where(m)));
      g.group[static_cast<size_t>(m)] = id;
    }
    g.groups.push_back({std::move(members), sync});
    return id;
  }

  struct P2PState {
    bool no_data = true;       // communicates alone
    int32_t compute = -1;      // the compute it feeds or follows
  };
  std::vector<P2PState> p2p;
  std::vector<int32_t> inline_tail;  // INLINE: the current stage's per-chunk last reductions

  void lift_p2p(int32_t p, std::vector<P2PState>& state, std::map<std::tuple<int, int32_t, int32_t>, int32_t>& valid) {
    const int32_t pp = job.pp, stages = job.vpp * job.pp;
    for (OpType compute : {OpType::FWD, OpType::BWD}) {
      const auto& comps = by_type[static_cast<size_t>(p)][static_cast<size_t>(compute)];
      const bool fwd = compute == OpType::FWD;
      const std::array<OpType, 2> lanes = fwd ? std::array{OpType::FWD_SEND, OpType::FWD_RECV}
                                              : std::array{OpType::BWD_SEND, OpType::BWD_RECV};
      for (OpType t : lanes) {
        std::vector<int32_t> ops = by_type[static_cast<size_t>(p)][static_cast<size_t>(t)];
        if (ops.empty()) continue;
        if (comps.empty()) {
          throw LiftError(fmt::format("{}: stage {} has no {} for it to carry data of", where(ops.front()), p,
                                      name_of(compute)));
        }
        sort_by_start(ops);
        const bool recv = t == OpType::FWD_RECV || t == OpType::BWD_RECV;
        double last_start = -1e300, first_end = 1e300;
        for (int32_t c : comps) {
          last_start = std::max(last_start, st(c));
          first_end = std::min(first_end, en(c));
        }
        const auto carries = [&](int32_t k) {
          return recv ? st(k) <= last_start + kP2PEpsMs : en(k) >= first_end - kP2PEpsMs;
        };
        const auto n = static_cast<int32_t>(std::count_if(ops.begin(), ops.end(), carries));
        const auto computes = static_cast<int32_t>(comps.size());
        int32_t next = 0;
        if (n != computes) {
          if ((p != 0 && p != pp - 1) || !(n == 0 || n + 1 == computes)) {
            throw LiftError(fmt::format("DP rank 0, stage {}, step {}: {} {} ops carry data but there are {} {}; "
                                        "expected one per compute (one fewer allowed on the first and last stage)",
                                        p, job.steps.front(), n, name_of(t), computes, name_of(compute)));
          }
          if (recv && n + 1 == computes) next = 1;  // the first chunk's first receive is absent
        }
        for (int32_t k : ops) {
          if (!carries(k)) continue;
          auto c = find(p, compute, next);
          if (!c) throw LiftError(fmt::format("{}: no {} #{} to match on stage {}", where(k), name_of(compute), next, p));
          ++next;
          // Past the model's first or last chunk: nothing to exchange.
          const int32_t gmc = std::max(op(*c).chunk, 0) * pp + p;
          const int32_t peer = gmc + ((t == OpType::FWD_SEND || t == OpType::BWD_RECV) ? 1 : -1);
          state[static_cast<size_t>(k)] = {peer < 0 || peer >= stages, *c};
        }
        int32_t v = 0;
        for (int32_t k : ops) {
          if (!state[static_cast<size_t>(k)].no_data) valid[{static_cast<int>(t), p, v++}] = k;
        }
      }
    }
  }

  void lift() {
    const auto K = static_cast<int32_t>(job.ops.size());
    g.deps.assign(static_cast<size_t>(K), {});
    g.group.assign(static_cast<size_t>(K), -1);
    by_type.assign(static_cast<size_t>(job.pp), std::vector<std::vector<int32_t>>(kOpTypes));
    for (int32_t k = 0; k < K; ++k) by_type[static_cast<size_t>(op(k).stage)][static_cast<size_t>(op(k).type)].push_back(k);
    const int32_t pp = job.pp;
    const bool use_dp = job.dp > 1;
    const bool overlapped = std::any_of(job.ops.begin(), job.ops.end(), [](const TemplateOp& t) { return t.type == OpType::SEP_GRADS_AR; });
    p2p.assign(static_cast<size_t>(K), {});
    std::map<std::tuple<int, int32_t, int32_t>, int32_t> valid;  // (type, stage, data-carrying rank) → op

    for (int32_t p = 0; p < pp; ++p) {
      inline_tail.clear();
      const auto comp = of_types(p, {OpType::FWD, OpType::BWD});
      if (comp.empty()) throw LiftError(fmt::format("DP rank 0, stage {}, step {}: no forward/backward compute", p, job.steps.front()));
      chain(comp);  // rule 1
      lift_p2p(p, p2p, valid);
      for (OpType t : {OpType::FWD_SEND, OpType::FWD_RECV, OpType::BWD_SEND, OpType::BWD_RECV}) {
        chain(of_types(p, {t}));  // rule 2: one chain per lane
        for (int32_t k : by_type[static_cast<size_t>(p)][static_cast<size_t>(t)]) {
          const int32_t c = p2p[static_cast<size_t>(k)].compute;
          if (c < 0) continue;
          if (t == OpType::FWD_SEND || t == OpType::BWD_SEND) {
            dep(k, c);
          } else {
            dep(c, k);
            if (auto prev = find(p, op(c).type, op(c).seq - 1)) dep(k, *prev);
          }
        }
      }
      // Rule 3.
      const auto first_bwd = std::find_if(comp.begin(), comp.end(), [&](int32_t k) { return op(k).type == OpType::BWD; });
      if (first_bwd != comp.end() && first_bwd - comp.begin() >= 2) {
        if (op(*(first_bwd - 1)).type != OpType::FWD || op(*(first_bwd - 2)).type != OpType::FWD)
          throw LiftError(fmt::format("{}: the two computes before the first backward are not forwards", where(*first_bwd)));
        for (OpType t : {OpType::BWD_RECV, OpType::BWD_SEND}) {
          if (auto k = find(p, t, 0)) dep(*k, *(first_bwd - 2));
        }
      }
      // Rule 4.
      const auto& ags = by_type[static_cast<size_t>(p)][static_cast<size_t>(OpType::PARAMS_AG)];
      const auto& rss = by_type[static_cast<size_t>(p)][static_cast<size_t>(OpType::GRADS_RS)];
      if (use_dp) {
        chain(of_types(p, {OpType::PARAMS_AG, OpType::GRADS_RS}));
        std::vector<int32_t> done;
        for (auto it = ags.rbegin(); it != ags.rend(); ++it) {
          const int32_t c = op(*it).chunk;
          if (std::find(done.begin(), done.end(), c) != done.end()) continue;
          done.push_back(c);
          std::optional<int32_t> first;
          for (int32_t k : comp) {
            if (op(k).type == OpType::FWD && op(k).chunk == c && (!first || st(k) < st(*first))) first = k;
          }
          if (!first) throw LiftError(fmt::format("{}: no forward-compute of model chunk {} waits for it", where(*it), c));
          dep(*first, *it);
        }
        if (overlapped || placement != Placement::AS_TRACED) {
          done.clear();
          for (int32_t r : rss) {
            const int32_t c = op(r).chunk;
            if (std::find(done.begin(), done.end(), c) != done.end()) continue;
            done.push_back(c);
            std::optional<int32_t> last;
            for (int32_t k : comp) {
              if (op(k).type == OpType::BWD && op(k).chunk == c && (!last || en(k) > en(*last))) last = k;
            }
            if (!last) throw LiftError(fmt::format("{}: no backward-compute of model chunk {} precedes it", where(r), c));
            dep(r, *last);
            if (placement == Placement::ASYNC) {
              // After the batch that sends the last backward's input gradient.
              for (int32_t k : by_type[static_cast<size_t>(p)][static_cast<size_t>(OpType::BWD_SEND)]) {
                if (p2p[static_cast<size_t>(k)].compute == *last) dep(r, k);
              }
            } else if (placement == Placement::INLINE) {
              // On the compute stream: the next compute waits for the chunk's last reduction.
              int32_t chunk_last = r;
              for (int32_t x : rss) {
                if (op(x).chunk == c) chunk_last = x;
              }
              const auto at = std::find(comp.begin(), comp.end(), *last);
              if (at + 1 != comp.end()) dep(*(at + 1), chunk_last);
              inline_tail.push_back(chunk_last);
            }
          }
        }
      }
      // Rule 5.
      int32_t last_compute = comp.front();
      for (int32_t k : comp) {
        if (en(k) > en(last_compute)) last_compute = k;
      }
      std::vector<int32_t> prev{last_compute};
      if (placement == Placement::INLINE) prev.insert(prev.end(), inline_tail.begin(), inline_tail.end());
      if (auto gc = find(p, OpType::GC, 0)) {
        for (int32_t u : prev) dep(*gc, u);
        prev = {*gc};
      }
      std::vector<std::pair<OpType, int32_t>> post{{OpType::LAYERNORM_AR, 0}};
      if (p == 0 || p == pp - 1) post.emplace_back(OpType::EMBEDDING_AR, 0);
      if (use_dp && overlapped) {
        if (!rss.empty()) prev.insert(prev.begin(), rss.back());
        post.emplace_back(OpType::SEP_GRADS_AR, 0);
      } else if (use_dp && placement == Placement::AS_TRACED) {
        for (int32_t r : rss) post.emplace_back(OpType::GRADS_RS, op(r).seq);
      }
      if (use_dp && placement != Placement::AS_TRACED) {
        // One drain: clip (the first op needing every reduced gradient) waits for all reductions.
        if (auto clip = find(p, OpType::CLIP, 0)) {
          for (int32_t r : rss) dep(*clip, r);
        }
      }
      post.emplace_back(OpType::CLIP, 0);
      post.emplace_back(OpType::OPTIMIZER, 0);
      for (const auto& [t, seq] : post) {
        auto k = find(p, t, seq);
        if (!k) {
          notes.push_back(fmt::format("DP rank 0, stage {}, step {}: no {} #{}; the chain after the last compute "
                                      "skips it",
                                      p, job.steps.front(), name_of(t), seq));
          continue;
        }
        for (int32_t u : prev) dep(*k, u);
        prev = {*k};
      }
    }

    // Rule 6.
    for (const auto& [key, k] : valid) {
      const auto t = static_cast<OpType>(std::get<0>(key));
      const int32_t p = std::get<1>(key), v = std::get<2>(key);
      if (g.group[static_cast<size_t>(k)] >= 0) continue;
      const bool fwd_side = t == OpType::FWD_SEND || t == OpType::BWD_RECV;
      const OpType mirror = t == OpType::FWD_SEND ? OpType::FWD_RECV
                            : t == OpType::FWD_RECV ? OpType::FWD_SEND
                            : t == OpType::BWD_SEND ? OpType::BWD_RECV
                                                    : OpType::BWD_SEND;
      const int32_t peer_stage = (p + (fwd_side ? 1 : -1) + pp) % pp;
      auto it = valid.find({static_cast<int>(mirror), peer_stage, v});
      if (it == valid.end()) {
        throw LiftError(fmt::format("{}: no peer: stage {} has no data-carrying {} number {} to pair with (missing "
                                    "peer op)",
                                    where(k), peer_stage, name_of(mirror), v));
      }
      add_group({k, it->second}, false);
    }
    for (int32_t k = 0; k < K; ++k) {
      if (is_p2p(op(k).type) && g.group[static_cast<size_t>(k)] < 0) add_group({k}, false);
      if (use_dp && (op(k).type == OpType::PARAMS_AG || op(k).type == OpType::GRADS_RS || op(k).type == OpType::SEP_GRADS_AR))
        add_group({k}, true);
    }
    {
      auto first = find(0, OpType::EMBEDDING_AR, 0), last = find(pp - 1, OpType::EMBEDDING_AR, 0);
      if (first && last && *first != *last) {
        add_group({*first, *last}, false);
      } else if (first && last) {
        add_group({*first}, false);
      } else if (first || last) {
        throw LiftError(fmt::format("{}: unmatched collective: stage {} has no embedding-grads-all-reduce to reduce "
                                    "with",
                                    where(first ? *first : *last), first ? pp - 1 : 0));
      }
    }
    std::vector<int32_t> clips;
    for (int32_t p = 0; p < pp; ++p) {
      if (auto k = find(p, OpType::CLIP, 0)) clips.push_back(*k);
    }
    if (!clips.empty()) {
      if (static_cast<int32_t>(clips.size()) != pp)
        throw LiftError(fmt::format("{}: unmatched collective: optimizer-clip-main-grad is on {} of {} stages",
                                    where(clips.front()), clips.size(), pp));
      add_group(clips, true);
    }
    order();
    std::vector<bool> used(static_cast<size_t>(K), false);
    for (int32_t k = 0; k < K; ++k) {
      if (!g.deps[static_cast<size_t>(k)].empty() || g.group[static_cast<size_t>(k)] >= 0) used[static_cast<size_t>(k)] = true;
      for (int32_t u : g.deps[static_cast<size_t>(k)]) used[static_cast<size_t>(u)] = true;
    }
    int64_t loose = 0;
    for (int32_t k = 0; k < K; ++k) {
      if (!used[static_cast<size_t>(k)] && ++loose <= 3)
        notes.push_back(fmt::format("{}: no dependency rule covers it; it starts at its launch delay", where(k)));
    }
    if (loose > 3) notes.push_back(fmt::format("{} more ops no dependency rule covers", loose - 3));
  }

  void order() {
    const auto K = static_cast<int32_t>(job.ops.size());
    const auto G = static_cast<int32_t>(g.groups.size());
    std::vector<std::vector<int32_t>> next(static_cast<size_t>(K + G));
    std::vector<int32_t> indeg(static_cast<size_t>(K + G), 0);
    for (int32_t v = 0; v < K; ++v) {
      for (int32_t u : g.deps[static_cast<size_t>(v)]) {
        const int32_t src = g.group[static_cast<size_t>(u)] >= 0 ? K + g.group[static_cast<size_t>(u)] : u;
        next[static_cast<size_t>(src)].push_back(v);
        ++indeg[static_cast<size_t>(v)];
      }
    }
    for (int32_t gi = 0; gi < G; ++gi) {
      for (int32_t m : g.groups[static_cast<size_t>(gi)].members) {
        next[static_cast<size_t>(m)].push_back(K + gi);
        ++indeg[static_cast<size_t>(K + gi)];
      }
    }
    std::deque<int32_t> q;
    for (int32_t n = 0; n < K + G; ++n) {
      if (indeg[static_cast<size_t>(n)] == 0) q.push_back(n);
    }
    while (!q.empty()) {
      const int32_t n = q.front();
      q.pop_front();
      g.order.push_back(n < K ? n : -(n - K + 1));
      for (int32_t m : next[static_cast<size_t>(n)]) {
        if (--indeg[static_cast<size_t>(m)] == 0) q.push_back(m);
      }
    }
    if (static_cast<int32_t>(g.order.size()) != K + G) {
      std::string stuck;
      int shown = 0;
      for (int32_t k = 0; k < K && shown < 4; ++k) {
        if (indeg[static_cast<size_t>(k)] > 0) {
          stuck += (shown++ ? "; " : "") + where(k);
        }
      }
      throw LiftError(fmt::format("the lifted dependencies form a cycle (the trace's op order contradicts the "
                                  "dependency rules); ops on it or after it: {}",
                                  stuck));
    }
  }
};

}  // namespace

Graph lift_graph(const Job& job, std::vector<std::string>& notes, Placement placement) {
  Lifter l{job, notes, placement, {}, {}, {}, {}};
  l.lift();
  return std::move(l.g);
}

}  // namespace ppstream::whatif
