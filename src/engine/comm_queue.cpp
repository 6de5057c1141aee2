// Builds the communication queues of every rank (comm_queue.h): one pass over each program in
// order, chaining each new unit behind the last unit of its queue.
#include "engine/comm_queue.h"

#include <unordered_map>
#include <utility>

namespace ppstream::engine {
namespace {

class Builder {
 public:
  Builder(const Topology& t, CommQueueTable& tab) : t_(t), tab_(tab) {}

  void program(int32_t p) {
    last_per_peer_.clear();
    last_ = kNone;
    const auto& instrs = t_.program(p).instrs;
    for (int32_t i = 0; i < static_cast<int32_t>(instrs.size()); ++i) {
      const Instr& in = instrs[static_cast<size_t>(i)];
      const int32_t g = t_.global(p, i);
      if (in.op == OpKind::BATCH && !in.p2p.empty()) batch(g, in);
      if (is_collective(in.op) && tab_.kind == CommQueues::ONE_PER_RANK) {
        const int32_t u = add(g, kNone, 0, last_);
        tab_.unit_of_instr[g] = u;
        tab_.unit_of_coll[t_.collective_slot(g)] = u;
      }
    }
  }

 private:
  const Topology& t_;
  CommQueueTable& tab_;
  std::unordered_map<int32_t, int32_t> last_per_peer_;  // PER_GROUP: peer rank → last unit
  int32_t last_ = kNone;                                // ONE_PER_RANK: last unit of the rank

  void batch(int32_t g, const Instr& in) {
    const int32_t first = t_.first_op(g);
    const auto n = static_cast<int32_t>(in.p2p.size());
    if (tab_.kind == CommQueues::ONE_PER_RANK) {
      const int32_t u = add(g, kNone, n, last_);
      tab_.unit_of_instr[g] = u;
      for (int32_t k = 0; k < n; ++k) tab_.unit_of_op[first + k] = u;
      return;
    }
    std::vector<std::pair<int32_t, int32_t>> mine;  // (peer, unit) of this batch
    for (int32_t k = 0; k < n; ++k) {
      const int32_t peer = in.p2p[static_cast<size_t>(k)].peer.v;
      int32_t u = kNone;
      for (const auto& [q, v] : mine)
        if (q == peer) u = v;
      if (u == kNone) {
        auto it = last_per_peer_.find(peer);
        u = add(g, peer, 0, it == last_per_peer_.end() ? kNone : it->second);
        last_per_peer_[peer] = u;
        mine.emplace_back(peer, u);
        if (tab_.unit_of_instr[g] == kNone) tab_.unit_of_instr[g] = u;
      }
      ++tab_.units[static_cast<size_t>(u)].ops;
      tab_.unit_of_op[first + k] = u;
    }
  }

  // A new unit behind `prev` on its queue; ONE_PER_RANK also makes it the rank's last unit.
  int32_t add(int32_t g, int32_t peer, int32_t ops, int32_t prev) {
    const auto u = static_cast<int32_t>(tab_.units.size());
    tab_.units.push_back({g, peer, ops, prev, kNone});
    if (prev != kNone) tab_.units[static_cast<size_t>(prev)].next = u;
    if (tab_.kind == CommQueues::ONE_PER_RANK) last_ = u;
    return u;
  }
};

}  // namespace

CommQueueTable build_comm_queues(const Topology& t, CommQueues kind) {
  CommQueueTable tab;
  tab.kind = kind;
  if (!tab.active()) return tab;
  tab.unit_of_op.assign(t.op_instr.size(), kNone);
  tab.unit_of_instr.assign(t.stream_of.size(), kNone);  // one per global instruction
  tab.unit_of_coll.assign(t.coll.size(), kNone);
  Builder b(t, tab);
  for (int32_t p = 0; p < t.programs(); ++p) b.program(p);
  return tab;
}

}  // namespace ppstream::engine
