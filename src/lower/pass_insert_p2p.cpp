// Pass insert-p2p: every P2P op is placed in its rank's program by one global key, the time its
// data is produced in the unit-time model (schedule.h): a send right after its producer, a
// receive as soon as the peer has produced the data (never later than its consumer). All ranks
// then follow one global order of transfers, which makes one-at-a-time execution (cpu-serial)
// and batched execution deadlock-free (the smallest unfinished transfer always has both ends
// posted). The ops between two computes form a batch; batches are then split into contiguous
// runs until every batch's ops with a peer are exactly one batch there (mirrored shapes).
// overlap_b_f (pair a backward with the forward after it in one P2P batch) needs nothing more:
// the batch after a backward already holds its SEND_B and the next forward's RECV_F
// (Megatron's send_backward_recv_forward). Sends always go right after their producer: the old
// fused B+F unit held B's send until after F (up to 66 % slower), and posting F's receive
// before B made B wait for it whenever the two shared a batch or overlap_p2p was off.
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "passes.h"
#include "ppstream/program/deps.h"
#include "ppstream/schedule/schedule.h"

namespace ppstream::lower {
namespace {

using TransferKey = std::tuple<int64_t, int32_t, int32_t, bool>;  // finish, producer stage, mb, backward

struct Unit {
  std::vector<size_t> computes;  // instruction indices of the unit's F/B
};

// A transfer both ends name the same way: (backward?, mb, producer stage).
using TransferId = std::tuple<bool, int32_t, int32_t>;
TransferId transfer_of(const P2POp& op) {
  const int32_t producer = is_send(op.kind) ? op.stage.v : mirror_of(op, Rank{}).stage.v;
  return {!is_forward(op.kind), op.mb.v, producer};
}

// Marks every node that lies on a cycle (in a strongly connected component of two or more
// nodes, or with a self-loop): Tarjan's algorithm, iterative. Returns whether any does.
bool mark_cycles(const std::vector<std::vector<int32_t>>& next, std::vector<bool>& on_cycle) {
  const auto n = static_cast<int32_t>(next.size());
  std::vector<int32_t> index(next.size(), -1), low(next.size(), 0);
  std::vector<bool> on_stack(next.size(), false);
  std::vector<int32_t> scc_stack;
  std::vector<std::pair<int32_t, size_t>> dfs;
  on_cycle.assign(next.size(), false);
  bool any = false;
  int32_t counter = 0;
  for (int32_t root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    dfs.assign(1, {root, 0});
    index[root] = low[root] = counter++;
    scc_stack.push_back(root);
    on_stack[root] = true;
    while (!dfs.empty()) {
      const int32_t v = dfs.back().first;
      const size_t child = dfs.back().second++;
      if (child < next[v].size()) {
        const int32_t w = next[v][child];
        if (index[w] < 0) {
          index[w] = low[w] = counter++;
          scc_stack.push_back(w);
          on_stack[w] = true;
          dfs.emplace_back(w, 0);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      dfs.pop_back();
      if (!dfs.empty()) low[dfs.back().first] = std::min(low[dfs.back().first], low[v]);
      if (low[v] != index[v]) continue;
      std::vector<int32_t> scc;
      int32_t w = -1;
      do {
        w = scc_stack.back();
        scc_stack.pop_back();
        on_stack[w] = false;
        scc.push_back(w);
      } while (w != v);
      const bool self_loop = std::find(next[v].begin(), next[v].end(), v) != next[v].end();
      if (scc.size() > 1 || self_loop) {
        any = true;
        for (int32_t x : scc) on_cycle[x] = true;
      }
    }
  }
  return any;
}

// Splits the slot batches ([rank][slot] = ops in transfer order) into pieces until, for every
// batch and every peer, the batch's ops with that peer are exactly one batch's ops there
// (mirrored shapes). A batch is split into contiguous runs only, so pieces stay in transfer
// order and one-at-a-time execution keeps following the global transfer order. Terminates:
// every round splits something or stops; single ops always mirror.
template <typename KeyOf>
std::vector<std::vector<std::vector<std::vector<P2POp>>>> mirror_batches(
    const std::vector<std::vector<std::vector<P2POp>>>& slots, const KeyOf& /*key_of*/) {
  // batches[rank][slot] = list of pieces
  std::vector<std::vector<std::vector<std::vector<P2POp>>>> b(slots.size());
  for (size_t r = 0; r < slots.size(); ++r)
    for (const auto& ops : slots[r]) b[r].push_back(ops.empty() ? std::vector<std::vector<P2POp>>{}
                                                               : std::vector<std::vector<P2POp>>{ops});
  for (bool changed = true; changed;) {
    changed = false;
    // Which batch (rank-local running id) holds each transfer on each side: (transfer, rank) →
    // batch id, a sorted vector (one allocation, not a node per op); the last entry of a key wins.
    using Where = std::pair<std::pair<TransferId, int32_t>, int64_t>;
    std::vector<Where> where;
    for (size_t r = 0; r < b.size(); ++r) {
      int64_t id = 0;
      for (const auto& slot : b[r])
        for (const auto& piece : slot) {
          for (const P2POp& op : piece) where.push_back({{transfer_of(op), static_cast<int32_t>(r)}, id});
          ++id;
        }
    }
    std::stable_sort(where.begin(), where.end(), [](const Where& x, const Where& y) { return x.first < y.first; });
    auto batch_at = [&](const std::pair<TransferId, int32_t>& key) {
      auto it = std::upper_bound(where.begin(), where.end(), key,
                                 [](const auto& k, const Where& w) { return k < w.first; });
      if (it == where.begin() || (it - 1)->first != key)
        throw std::logic_error("insert-p2p: a transfer has no batch on its peer");
      return (it - 1)->second;
    };
    for (size_t r = 0; r < b.size(); ++r)
      for (auto& slot : b[r]) {
        std::vector<std::vector<P2POp>> split;
        for (const auto& piece : slot) {
          std::map<int32_t, int64_t> peer_batch;  // peer → its batch id within the current run
          split.emplace_back();
          for (const P2POp& op : piece) {
            const int64_t there = batch_at({transfer_of(op), op.peer.v});
            auto it = peer_batch.find(op.peer.v);
            if (it != peer_batch.end() && it->second != there) {
              split.emplace_back();
              peer_batch.clear();
              changed = true;
            }
            peer_batch[op.peer.v] = there;
            split.back().push_back(op);
          }
        }
        slot = std::move(split);
      }
  }
  return b;
}

}  // namespace

ProgramSet insert_p2p(ProgramSet out, const PipelineConfig& cfg) {
  const int32_t pp = cfg.pipeline_parallel_size;
  const int32_t S = cfg.num_stages();
  const Placement pl = cfg.placement();
  // Stage → PP rank (ir.h Placement). A transfer between two stages of one rank (V placement:
  // stages pp-1 and pp on the last rank) gets no SEND/RECV: the consumer follows its producer on
  // the same compute stream, so program order carries the dependency.
  auto rank_of = [&](int32_t stage) { return pp_rank_of_stage(Stage{stage}, pp, pl); };

  // Units: one compute each (overlap_b_f moves receives only, below).
  ComputeOrder order(out.programs.size());
  std::vector<std::vector<Unit>> units(out.programs.size());
  for (size_t pi = 0; pi < out.programs.size(); ++pi) {
    const Program& p = out.programs[pi];
    for (size_t k = 0; k < p.instrs.size(); ++k) {
      const Instr& i = p.instrs[k];
      if (!is_compute(i.op)) continue;
      units[pi].push_back({{k}});
      const BackwardPart part = i.op == OpKind::I ? BackwardPart::INPUT : i.op == OpKind::W ? BackwardPart::WEIGHT
                                                                                            : BackwardPart::FULL;
      order[pi].push_back({i.op != OpKind::F, i.mb, i.stage, part});
    }
  }
  const UnitTimeline times = simulate_unit_time(order, {}, pl);
  // Time each compute's output becomes visible (end of its unit) and each unit's start slot.
  std::map<TransferId, int64_t> produced;  // keyed like transfers: (backward, mb, producer stage)
  std::vector<std::vector<int64_t>> unit_start(out.programs.size());
  for (size_t pi = 0; pi < order.size(); ++pi) {
    size_t a = 0;
    for (const Unit& u : units[pi]) {
      const int64_t start = times.slot[pi][a];
      const int64_t end = times.slot[pi][a + u.computes.size() - 1] + 1;
      unit_start[pi].push_back(start);
      for (size_t g = 0; g < u.computes.size(); ++g, ++a) {
        const ComputeAction& c = order[pi][a];
        if (has_role(op_kind(c), Role::FORWARD)) produced[{false, c.mb.v, c.stage.v}] = end;
        if (has_role(op_kind(c), Role::INPUT_GRAD)) produced[{true, c.mb.v, c.stage.v}] = end;
      }
    }
  }
  // Global key of a transfer: (visible time, producer stage, microbatch, backward).
  auto key_of = [&](const P2POp& op) -> TransferKey {
    const TransferId t = transfer_of(op);
    return {produced.at(t), std::get<2>(t), std::get<1>(t), std::get<0>(t)};
  };

  // Phase 1: every op of every rank with its slot (slot u = the gap before unit u). Sends sit
  // right after their producer. A receive starts in the gap before its consumer (Megatron-LM's
  // "send this, receive the next" batches) and may move back as far as its key-order gap (the
  // first gap after which no unit starts before its data exists).
  struct Placed {
    P2POp op;
    size_t slot = 0;
    size_t earliest = 0;
    int32_t id = 0;       // dense transfer id
    TransferKey key{};
  };
  std::vector<std::vector<Placed>> placed(out.programs.size());
  for (size_t pi = 0; pi < out.programs.size(); ++pi) {
    const Program& p = out.programs[pi];
    const int32_t r = p.pp_rank;
    const auto& us = units[pi];
    auto place = [&](const P2POp& op, size_t slot) {
      size_t earliest = slot;
      const int64_t t = std::get<0>(key_of(op));
      while (!is_send(op.kind) && earliest > 0 && unit_start[pi][earliest - 1] >= t) --earliest;
      placed[pi].push_back({op, slot, earliest});
    };
    // Sends and receives of each compute, from the dependency model (program/deps.h).
    for (size_t u = 0; u < us.size(); ++u)
      for (size_t k : us[u].computes) {
        const Instr& c = p.instrs[k];
        const int32_t s = c.stage.v;
        if (const auto send = send_of(c.op, c.stage, S)) {
          const int32_t to = *send == P2PKind::SEND_F ? s + 1 : s - 1;
          if (rank_of(to) != r) place({*send, c.mb, c.stage, Rank{rank_of(to)}}, u + 1);
        }
        for (const Need& n : needs_of(c.op, c.mb, c.stage, S))
          if (n.recv && rank_of(n.stage.v) != r) place({*n.recv, c.mb, c.stage, Rank{rank_of(n.stage.v)}}, u);
      }
  }
  // Each rank's op sequence (slot, then key) must be consistent with one global order of
  // transfers, else blocking execution can deadlock. While the "precedes" graph over transfers
  // has cycles, move the late receives on them (every strongly connected component) back to
  // their key-order gap; the all-key-order placement is acyclic, so this ends.
  // Transfers as dense ids (each appears on its two ranks) with their keys, computed once.
  std::map<TransferId, int32_t> ids;
  for (auto& ops : placed)
    for (Placed& x : ops) {
      x.id = ids.emplace(transfer_of(x.op), static_cast<int32_t>(ids.size())).first->second;
      x.key = key_of(x.op);
    }
  auto sequence_of = [&](size_t pi) {
    std::vector<const Placed*> seq;
    for (const Placed& x : placed[pi]) seq.push_back(&x);
    std::stable_sort(seq.begin(), seq.end(), [](const Placed* x, const Placed* y) {
      return std::tie(x->slot, x->key) < std::tie(y->slot, y->key);
    });
    return seq;
  };
  for (;;) {
    std::vector<std::vector<int32_t>> next(ids.size());
    for (size_t pi = 0; pi < placed.size(); ++pi) {
      const auto seq = sequence_of(pi);
      for (size_t k = 1; k < seq.size(); ++k) next[seq[k - 1]->id].push_back(seq[k]->id);
    }
    std::vector<bool> on_cycle;
    if (!mark_cycles(next, on_cycle)) break;
    bool moved = false;
    for (auto& ops : placed)
      for (Placed& x : ops)
        if (!is_send(x.op.kind) && x.slot != x.earliest && on_cycle[x.id]) {
          x.slot = x.earliest;
          moved = true;
        }
    if (!moved) throw std::logic_error("insert-p2p: transfer order has a cycle that no receive can break");
  }
  std::vector<std::vector<std::vector<P2POp>>> slots(out.programs.size());
  for (size_t pi = 0; pi < out.programs.size(); ++pi) {
    slots[pi].resize(units[pi].size() + 1);
    for (const Placed* x : sequence_of(pi)) slots[pi][x->slot].push_back(x->op);
  }
  // Phase 2: split batches until every batch's ops with each peer form one batch there.
  const std::vector<std::vector<std::vector<std::vector<P2POp>>>> batches = mirror_batches(slots, key_of);

  // Phase 3: emit each slot's batches before its unit.
  for (size_t pi = 0; pi < out.programs.size(); ++pi) {
    Program& p = out.programs[pi];
    std::vector<Instr> result;
    result.reserve(p.instrs.size() * 2);
    auto emit = [&](size_t slot) {
      for (const auto& ops : batches[pi][slot]) {
        Instr b;
        b.op = OpKind::BATCH;
        b.stream = "compute";
        b.p2p = ops;
        result.push_back(std::move(b));
      }
    };
    const auto& us = units[pi];
    size_t u = 0;
    for (size_t k = 0; k < p.instrs.size(); ++k) {
      if (u < us.size() && k == us[u].computes.front()) emit(u);
      result.push_back(std::move(p.instrs[k]));
      if (u < us.size() && k == us[u].computes.back() && ++u == us.size()) emit(us.size());
    }
    p.instrs = std::move(result);
  }
  return out;
}

}  // namespace ppstream::lower
