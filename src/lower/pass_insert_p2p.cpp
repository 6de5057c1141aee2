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
//
// Phases (each a function below): collect the compute units, time their outputs (unit-time
// model), place every op in a gap, move receives until the ranks agree on one transfer order,
// split the gaps' batches until their shapes mirror, emit the batches. Transfers are numbered
// densely (TransferIndex), so every lookup is an array access: linear in the ops but for the
// per-rank sorts.
#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "passes.h"
#include "ppstream/program/deps.h"
#include "ppstream/schedule/schedule.h"
#include "ppstream/program/streams.h"

namespace ppstream::lower {
namespace {

using TransferKey = std::tuple<int64_t, int32_t, int32_t, bool>;  // finish, producer stage, mb, backward

// Dense numbers of the step's transfers: (backward, mb, producer stage) → [0, size()), the same
// on both ranks of a transfer. Microbatches in [0, microbatches), stages in [0, stages).
class TransferIndex {
 public:
  TransferIndex(int32_t microbatches, int32_t stages) : mbs_(microbatches), stages_(stages) {}
  size_t size() const { return 2 * static_cast<size_t>(mbs_) * static_cast<size_t>(stages_); }
  size_t of(bool backward, int32_t mb, int32_t stage) const {
    if (mb < 0 || mb >= mbs_ || stage < 0 || stage >= stages_)
      throw std::logic_error("insert-p2p: a transfer outside the step's microbatches or stages");
    return ((backward ? static_cast<size_t>(mbs_) : 0) + static_cast<size_t>(mb)) * static_cast<size_t>(stages_) +
           static_cast<size_t>(stage);
  }
  size_t operator()(const P2POp& op) const {
    const Transfer t = carried_by(op);  // named alike on both ends (deps.h)
    return of(t.role != Role::FORWARD, t.mb.v, t.producer.v);
  }

 private:
  int32_t mbs_, stages_;
};

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

// Per rank: the instruction index of each compute (one unit each; overlap_b_f moves receives
// only), and the schedule those computes form for the unit-time model.
struct Units {
  std::vector<std::vector<size_t>> compute;  // [rank][unit] → instruction index
  ComputeOrder order;                        // [rank][unit] → the same compute as an action
};

Units collect_units(const ProgramSet& set) {
  Units u;
  u.compute.resize(set.programs.size());
  u.order.resize(set.programs.size());
  for (size_t pi = 0; pi < set.programs.size(); ++pi) {
    const Program& p = set.programs[pi];
    for (size_t k = 0; k < p.instrs.size(); ++k) {
      const Instr& i = p.instrs[k];
      if (!is_compute(i.op)) continue;
      u.compute[pi].push_back(k);
      const BackwardPart part = i.op == OpKind::I ? BackwardPart::INPUT : i.op == OpKind::W ? BackwardPart::WEIGHT
                                                                                            : BackwardPart::FULL;
      u.order[pi].push_back({i.op != OpKind::F, i.mb, i.stage, part});
    }
  }
  return u;
}

// The largest microbatch of the computes + 1 (the transfers' microbatch range).
int32_t microbatches_of(const Units& u) {
  int32_t m = 0;
  for (const auto& rank : u.order)
    for (const ComputeAction& c : rank) m = std::max(m, c.mb.v + 1);
  return m;
}

// When each transfer's data becomes visible (the end slot of its producer's unit, by
// TransferIndex; -1 when nothing produces it) and the start slot of every unit.
struct Visible {
  std::vector<int64_t> produced;
  std::vector<std::vector<int64_t>> unit_start;  // [rank][unit]
};

Visible visible_times(const Units& u, const TransferIndex& index, Placement pl) {
  const UnitTimeline times = simulate_unit_time(u.order, {}, pl);
  Visible v;
  v.produced.assign(index.size(), -1);
  v.unit_start.resize(u.order.size());
  for (size_t pi = 0; pi < u.order.size(); ++pi)
    for (size_t a = 0; a < u.order[pi].size(); ++a) {
      const int64_t start = times.slot[pi][a];
      v.unit_start[pi].push_back(start);
      const ComputeAction& c = u.order[pi][a];
      if (has_role(op_kind(c), Role::FORWARD)) v.produced[index.of(false, c.mb.v, c.stage.v)] = start + 1;
      if (has_role(op_kind(c), Role::INPUT_GRAD)) v.produced[index.of(true, c.mb.v, c.stage.v)] = start + 1;
    }
  return v;
}

// One op placed in a gap of its rank (gap u = before unit u; the last gap follows the last unit).
struct Placed {
  P2POp op;
  size_t slot = 0;      // the gap it is in
  size_t earliest = 0;  // the earliest gap a receive may move back to (its key-order gap)
  int32_t id = 0;       // TransferIndex of its transfer
  TransferKey key{};    // global order of transfers: (visible time, producer stage, mb, backward)
};

// Phase 1: every op of every rank with its gap. Sends sit right after their producer. A receive
// starts in the gap before its consumer (Megatron-LM's "send this, receive the next" batches)
// and may move back as far as its key-order gap (the first gap after which no unit starts
// before its data exists). Sends and receives come from the dependency model (program/deps.h);
// a transfer between two stages of one rank (V placement: stages pp-1 and pp on the last rank)
// gets no SEND/RECV: the consumer follows its producer on the same compute stream.
std::vector<std::vector<Placed>> place_ops(const ProgramSet& set, const Units& u, const Visible& vis,
                                           const TransferIndex& index, const PipelineConfig& cfg) {
  const int32_t pp = cfg.pipeline_parallel_size;
  const int32_t S = cfg.num_stages();
  const Placement pl = cfg.placement();
  auto rank_of = [&](int32_t stage) { return pp_rank_of_stage(Stage{stage}, pp, pl); };
  std::vector<std::vector<Placed>> placed(set.programs.size());
  for (size_t pi = 0; pi < set.programs.size(); ++pi) {
    const Program& p = set.programs[pi];
    const int32_t r = p.pp_rank;
    auto place = [&](const P2POp& op, size_t slot) {
      const size_t id = index(op);
      const int64_t t = vis.produced[id];
      if (t < 0) throw std::logic_error("insert-p2p: a transfer has no producer");
      const Transfer tr = carried_by(op);
      size_t earliest = slot;
      while (!is_send(op.kind) && earliest > 0 && vis.unit_start[pi][earliest - 1] >= t) --earliest;
      placed[pi].push_back({op, slot, earliest, static_cast<int32_t>(id), {t, tr.producer.v, tr.mb.v, tr.role != Role::FORWARD}});
    };
    for (size_t unit = 0; unit < u.compute[pi].size(); ++unit) {
      const Instr& c = p.instrs[u.compute[pi][unit]];
      const int32_t s = c.stage.v;
      if (const auto send = send_of(c.op, c.stage, S)) {
        const int32_t to = *send == P2PKind::SEND_F ? s + 1 : s - 1;
        if (rank_of(to) != r) place({*send, c.mb, c.stage, Rank{rank_of(to)}}, unit + 1);
      }
      for (const Need& n : needs_of(c.op, c.mb, c.stage, S))
        if (n.recv && rank_of(n.stage.v) != r) place({*n.recv, c.mb, c.stage, Rank{rank_of(n.stage.v)}}, unit);
    }
  }
  return placed;
}

// A rank's ops in issue order: by gap, then by transfer key (stable).
std::vector<const Placed*> sequence_of(const std::vector<Placed>& ops) {
  std::vector<const Placed*> seq;
  seq.reserve(ops.size());
  for (const Placed& x : ops) seq.push_back(&x);
  std::stable_sort(seq.begin(), seq.end(), [](const Placed* x, const Placed* y) {
    return std::tie(x->slot, x->key) < std::tie(y->slot, y->key);
  });
  return seq;
}

// Phase 1b. Invariant on return: each rank's op sequence is consistent with one global order of
// transfers (else blocking execution can deadlock). While the "precedes" graph over transfers
// has cycles, the late receives on them (every strongly connected component) move back to their
// key-order gap; the all-key-order placement is acyclic, so this ends.
void break_cycles(std::vector<std::vector<Placed>>& placed, const TransferIndex& index) {
  for (;;) {
    std::vector<std::vector<int32_t>> next(index.size());
    for (const auto& ops : placed) {
      const auto seq = sequence_of(ops);
      for (size_t k = 1; k < seq.size(); ++k) next[seq[k - 1]->id].push_back(seq[k]->id);
    }
    std::vector<bool> on_cycle;
    if (!mark_cycles(next, on_cycle)) return;
    bool moved = false;
    for (auto& ops : placed)
      for (Placed& x : ops)
        if (!is_send(x.op.kind) && x.slot != x.earliest && on_cycle[x.id]) {
          x.slot = x.earliest;
          moved = true;
        }
    if (!moved) throw std::logic_error("insert-p2p: transfer order has a cycle that no receive can break");
  }
}

// [rank][gap][batch] → ops in transfer order.
using Batches = std::vector<std::vector<std::vector<std::vector<P2POp>>>>;

// Which batch (rank-local running id) holds each transfer on each of its two ranks.
class BatchOfTransfer {
 public:
  BatchOfTransfer(const Batches& b, const TransferIndex& index) : sides_(index.size()) {
    for (size_t r = 0; r < b.size(); ++r) {
      int64_t id = 0;
      for (const auto& slot : b[r])
        for (const auto& piece : slot) {
          for (const P2POp& op : piece) set(index(op), static_cast<int32_t>(r), id);
          ++id;
        }
    }
  }
  int64_t at(size_t transfer, int32_t rank) const {
    const Sides& s = sides_[transfer];
    for (int k = 0; k < 2; ++k)
      if (s.rank[k] == rank) return s.batch[k];
    throw std::logic_error("insert-p2p: a transfer has no batch on its peer");
  }

 private:
  struct Sides {
    int32_t rank[2] = {-1, -1};
    int64_t batch[2] = {0, 0};
  };
  std::vector<Sides> sides_;

  void set(size_t transfer, int32_t rank, int64_t batch) {  // a rank's last entry wins
    Sides& s = sides_[transfer];
    for (int k = 0; k < 2; ++k)
      if (s.rank[k] == rank || s.rank[k] < 0) {
        s.rank[k] = rank;
        s.batch[k] = batch;
        return;
      }
    throw std::logic_error("insert-p2p: a transfer on more than two ranks");
  }
};

// Phase 2: splits the gaps' batches into pieces until, for every batch and every peer, the
// batch's ops with that peer are exactly one batch's ops there (mirrored shapes). A batch is
// split into contiguous runs only, so pieces stay in transfer order and one-at-a-time execution
// keeps following the global transfer order. Terminates: every round splits something or
// stops; single ops always mirror.
Batches mirror_batches(const std::vector<std::vector<std::vector<P2POp>>>& slots, const TransferIndex& index) {
  Batches b(slots.size());
  for (size_t r = 0; r < slots.size(); ++r)
    for (const auto& ops : slots[r]) b[r].push_back(ops.empty() ? std::vector<std::vector<P2POp>>{}
                                                               : std::vector<std::vector<P2POp>>{ops});
  std::vector<std::pair<int32_t, int64_t>> peer_batch;  // peer → its batch id within the current run
  for (bool changed = true; changed;) {
    changed = false;
    const BatchOfTransfer where(b, index);
    for (auto& rank : b)
      for (auto& slot : rank) {
        std::vector<std::vector<P2POp>> split;
        for (const auto& piece : slot) {
          peer_batch.clear();
          split.emplace_back();
          for (const P2POp& op : piece) {
            const int64_t there = where.at(index(op), op.peer.v);
            auto it = std::find_if(peer_batch.begin(), peer_batch.end(), [&](const auto& e) { return e.first == op.peer.v; });
            if (it != peer_batch.end() && it->second != there) {
              split.emplace_back();
              peer_batch.clear();
              changed = true;
              it = peer_batch.end();
            }
            if (it == peer_batch.end())
              peer_batch.emplace_back(op.peer.v, there);
            else
              it->second = there;
            split.back().push_back(op);
          }
        }
        slot = std::move(split);
      }
  }
  return b;
}

// Phase 3: each gap's batches go on `compute` before the gap's unit (the last gap's after the
// last unit).
void emit_batches(ProgramSet& set, const Units& u, Batches& batches) {
  for (size_t pi = 0; pi < set.programs.size(); ++pi) {
    Program& p = set.programs[pi];
    std::vector<Instr> result;
    result.reserve(p.instrs.size() * 2);
    auto emit = [&](size_t slot) {
      for (auto& ops : batches[pi][slot]) {
        Instr b;
        b.op = OpKind::BATCH;
        b.stream = streams::kCompute;
        b.p2p = std::move(ops);
        result.push_back(std::move(b));
      }
    };
    const auto& us = u.compute[pi];
    size_t unit = 0;
    for (size_t k = 0; k < p.instrs.size(); ++k) {
      if (unit < us.size() && k == us[unit]) emit(unit);
      result.push_back(std::move(p.instrs[k]));
      if (unit < us.size() && k == us[unit] && ++unit == us.size()) emit(us.size());
    }
    p.instrs = std::move(result);
  }
}

}  // namespace

ProgramSet insert_p2p(ProgramSet out, const PipelineConfig& cfg) {
  const Units units = collect_units(out);
  const TransferIndex index(microbatches_of(units), cfg.num_stages());
  const Visible vis = visible_times(units, index, cfg.placement());
  std::vector<std::vector<Placed>> placed = place_ops(out, units, vis, index, cfg);
  break_cycles(placed, index);
  std::vector<std::vector<std::vector<P2POp>>> slots(out.programs.size());
  for (size_t pi = 0; pi < out.programs.size(); ++pi) {
    slots[pi].resize(units.compute[pi].size() + 1);
    for (const Placed* x : sequence_of(placed[pi])) slots[pi][x->slot].push_back(x->op);
  }
  Batches batches = mirror_batches(slots, index);
  emit_batches(out, units, batches);
  return out;
}

}  // namespace ppstream::lower
