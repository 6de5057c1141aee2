// Deadlock diagnosis: when the queue runs dry with work left, every issued stream head that
// has not completed is reported with what it waits for, and the waiting cycle is found by
// following each head to the head that blocks the thing it needs. Strings are built only here.
#include <algorithm>

#include <fmt/format.h>

#include "engine/engine_state.h"
#include "engine/ordinal.h"
#include "ppstream/program/format.h"

namespace ppstream {
namespace engine {
namespace {


class Diagnosis {
 public:
  explicit Diagnosis(const EngineState& st) : st_(st), topo_(st.topo), node_of_slot_(topo_.stream_names.size(), kNone) {}

  void run() {
    // Nodes first (so targets can be resolved), then descriptions and edges.
    std::vector<std::pair<int32_t, int32_t>> heads;  // (prog, instr)
    for (int32_t p = 0; p < topo_.programs(); ++p)
      for (int32_t slot = topo_.stream_base[p]; slot < topo_.stream_base[p + 1]; ++slot) {
        const int32_t h = st_.head_instr(slot);
        if (h == kNone || !st_.timing(p, h).issued()) continue;
        node_of_slot_[slot] = static_cast<int32_t>(heads.size());
        heads.emplace_back(p, h);
      }
    auto& out = st_.res.blocked;
    for (auto [p, i] : heads) {
      Blocked b;
      b.rank = topo_.program(p).rank;
      b.index = i;
      b.stream = topo_.program(p).stream_name(topo_.program(p).instrs[i].stream);
      b.text = to_text(topo_.program(p), topo_.program(p).instrs[i]);
      describe(p, i, b);
      out.push_back(std::move(b));
    }
    find_cycle();
  }

 private:
  const EngineState& st_;
  const Topology& topo_;
  std::vector<int32_t> node_of_slot_;

  const Instr& instr(int32_t p, int32_t i) const { return topo_.program(p).instrs[i]; }
  std::string where(int32_t p, int32_t i) const {
    return fmt::format("r{} #{} {}", topo_.program(p).rank.v, i, to_text(topo_.program(p), instr(p, i)));
  }

  // The blocked head that keeps instruction (p, i) from completing.
  std::optional<int32_t> resolve(int32_t p, int32_t i) const {
    const int32_t slot = st_.stream_slot(p, i);
    const int32_t h = st_.head_instr(slot);
    if (h != kNone && st_.timing(p, h).issued() && node_of_slot_[slot] != kNone) return node_of_slot_[slot];
    const int32_t b = st_.host_blocked_on[p];
    if (b != kNone && node_of_slot_[st_.stream_slot(p, b)] != kNone) return node_of_slot_[st_.stream_slot(p, b)];
    return std::nullopt;
  }

  void describe(int32_t p, int32_t i, Blocked& b) const {
    const Instr& in = instr(p, i);
    switch (in.op) {
      case OpKind::WAIT: return describe_wait(p, i, b);
      case OpKind::BATCH: return describe_batch(p, i, b);
      case OpKind::UNSHARD:
      case OpKind::REDUCE_GRAD:
      case OpKind::COLLECTIVE: return describe_collective(p, i, b);
      default: b.waiting_for = "nothing (engine invariant broken: this kind never blocks)";
    }
  }

  void describe_wait(int32_t p, int32_t i, Blocked& b) const {
    const std::string& event = topo_.program(p).event_name(instr(p, i).event);
    const int32_t rec = topo_.synced_record(p, i);  // the RECORD it synchronizes with
    if (rec == kNone) {
      b.waiting_for = fmt::format("event {} never recorded on r{}", event, b.rank.v);
      return;
    }
    b.waiting_for = fmt::format("event {}, recorded by {}, which has not run", event, where(p, rec));
    b.waits_on_rank = b.rank;
    b.waits_on = resolve(p, rec);
  }

  void describe_batch(int32_t p, int32_t i, Blocked& b) const {
    const Instr& in = instr(p, i);
    const int32_t first = topo_.first_op(topo_.global(p, i));
    if (held_by_queue(p, i, b)) return;
    for (int32_t k = 0; k < static_cast<int32_t>(in.p2p.size()); ++k) {
      const int32_t op = first + k;
      if (happened(st_.matched[op])) continue;
      const P2POp& mine = in.p2p[k];
      b.waits_on_rank = mine.peer;
      const int32_t m = topo_.mirror[op];
      if (m == kNone) {
        b.waiting_for = unpaired(p, op);
        return;
      }
      const int32_t gm = topo_.op_instr[m];
      const int32_t pm = topo_.prog_of_global(gm);
      const int32_t im = gm - topo_.instr_base[pm];
      const std::string what = to_text(topo_.op(m));
      if (st_.timing(pm, im).started())
        b.waiting_for = fmt::format("peer r{} has not reached {} (ops of its batch run one at a time, or its "
                                    "communication queue holds them): {}",
                                    mine.peer.v, what, where(pm, im));
      else
        b.waiting_for = fmt::format("peer r{} has not posted {}: {}", mine.peer.v, what, where(pm, im));
      b.waits_on = resolve(pm, im);
      return;
    }
    b.waiting_for = "nothing (every op matched; engine invariant broken)";
  }

  // A queued BATCH with a unit held behind an unfinished unit of its queue (comm_queue.h).
  bool held_by_queue(int32_t p, int32_t i, Blocked& b) const {
    const auto& q = st_.queues;
    if (!q.active()) return false;
    const int32_t g = topo_.global(p, i);
    for (auto u = static_cast<size_t>(q.unit_of_instr[g]); u < q.units.size() && q.units[u].g == g; ++u) {
      if (!st_.unit_held_since[u]) continue;
      const int32_t prev = q.units[static_cast<size_t>(q.units[u].prev)].g;
      const int32_t ip = prev - topo_.instr_base[p];
      b.waiting_for = fmt::format("{}: {}, issued earlier there, has not finished", queue_name(q.units[u]), where(p, ip));
      b.waits_on_rank = b.rank;
      b.waits_on = resolve(p, ip);
      return true;
    }
    return false;
  }

  std::string queue_name(const QueueUnit& u) const {
    if (u.peer == kNone) return "the rank's one communication stream";
    return fmt::format("the device stream of the P2P group with r{}", u.peer);
  }

  // An op whose channel has fewer ops on the other side.
  std::string unpaired(int32_t p, int32_t op) const {
    const P2POp& mine = topo_.op(op);
    for (const ChannelList& l : topo_.channels[p]) {
      auto it = std::find(l.ops.begin(), l.ops.end(), op);
      if (it == l.ops.end()) continue;
      size_t other = 0;
      for (const ChannelList& r : topo_.channels[l.peer_prog])
        if (r.peer_prog == p && r.forward == l.forward && r.send != l.send) other = r.ops.size();
      const char* dir = l.forward ? "F" : "B";
      return fmt::format("peer r{} never posts a mirror of {}: it is the {} {} op on the channel, r{} posts only {} "
                         "{}",
                         mine.peer.v, to_text(mine), ordinal(static_cast<size_t>(it - l.ops.begin()) + 1),
                         l.send ? "SEND" : "RECV", mine.peer.v, other, l.send ? fmt::format("RECV_{}", dir)
                                                                             : fmt::format("SEND_{}", dir));
    }
    return fmt::format("peer r{} never posts a mirror of {}", mine.peer.v, to_text(mine));
  }

  void describe_collective(int32_t p, int32_t i, Blocked& b) const {
    const int32_t g = topo_.global(p, i);
    const int32_t cs = topo_.collective_slot(g);
    const CollectiveSlot& slot = topo_.coll[cs];
    if (const int32_t prev = st_.comm_blocker(cs); st_.comm_held_since[cs] && prev != kNone) {
      const int32_t ip = prev - topo_.instr_base[p];
      b.waiting_for =
          st_.queues.active()
              ? fmt::format("{}: {}, issued earlier there, has not finished",
                            queue_name(st_.queues.units[static_cast<size_t>(st_.queues.unit_of_coll[cs])]),
                            where(p, ip))
              : fmt::format("communicator order: {}, issued earlier on the same communicator, has not finished",
                            where(p, ip));
      b.waits_on_rank = b.rank;
      b.waits_on = resolve(p, ip);
      return;
    }
    int32_t inst = kNone;
    for (uint8_t j = 0; j < slot.n; ++j)
      if (!st_.inst_done[slot.inst[j]]) {
        inst = slot.inst[j];
        break;
      }
    if (inst == kNone) {
      b.waiting_for = "nothing (collective complete; engine invariant broken)";
      return;
    }
    const CollectiveInstance& ci = topo_.instances[inst];
    const std::vector<Rank> ranks = topo_.instance_ranks(ci);
    const std::string group_name = ci.named == kNone ? fmt::format("{}-group", to_string(ci.kind))
                                                     : fmt::format("group {}", topo_.named[static_cast<size_t>(ci.named)].spec.group);
    std::vector<std::string> missing;
    for (int32_t j = 0; j < ci.size; ++j) {
      const int32_t gm = topo_.instance_members[ci.members_begin + j];
      if (gm == kNone) {
        missing.push_back(fmt::format("r{} (issues only {} {} collectives)", ranks[j].v,
                                      topo_.member_collectives(ci, j), group_name));
        if (!b.waits_on_rank) b.waits_on_rank = ranks[j];
        continue;
      }
      if (st_.arrived_at(gm, inst)) continue;
      const int32_t pm = topo_.prog_of_global(gm);
      const int32_t im = gm - topo_.instr_base[pm];
      missing.push_back(where(pm, im));
      if (!b.waits_on) {
        b.waits_on_rank = ranks[j];
        b.waits_on = resolve(pm, im);
      }
    }
    std::string list;
    for (size_t j = 0; j < missing.size() && j < 4; ++j) list += (j ? "; " : "") + missing[j];
    if (missing.size() > 4) list += fmt::format("; and {} more", missing.size() - 4);
    b.waiting_for = fmt::format("the {} {} collective (r{}..r{}) waits for {}", ordinal(static_cast<size_t>(ci.k) + 1),
                                group_name, ranks.front().v, ranks.back().v, list);
  }

  // Each node has at most one outgoing edge: walk from every node, colouring the path.
  void find_cycle() {
    auto& res = st_.res;
    const auto n = res.blocked.size();
    std::vector<int32_t> colour(n, 0);  // 0 new, 1 on the current walk, 2 done
    for (size_t s = 0; s < n && res.cycle_blocked.empty(); ++s) {
      std::vector<int32_t> path;
      auto v = static_cast<int32_t>(s);
      while (colour[v] == 0) {
        colour[v] = 1;
        path.push_back(v);
        if (!res.blocked[v].waits_on) break;
        v = *res.blocked[v].waits_on;
      }
      if (colour[v] == 1 && res.blocked[v].waits_on) {
        auto it = std::find(path.begin(), path.end(), v);
        res.cycle_blocked.assign(it, path.end());
      }
      for (int32_t x : path) colour[x] = 2;
    }
    for (int32_t x : res.cycle_blocked) {
      const Rank r = res.blocked[x].rank;
      if (res.cycle.empty() || res.cycle.back() != r) res.cycle.push_back(r);
    }
    if (res.cycle.size() > 1 && res.cycle.front() == res.cycle.back()) res.cycle.pop_back();
  }
};

}  // namespace

void diagnose_deadlock(const EngineState& st) { Diagnosis(st).run(); }

}  // namespace engine

std::string format_deadlock(const ProgramSet& /*set*/, const EngineResult& r) {
  if (r.completed) return "no deadlock: every instruction completed\n";
  std::string out = fmt::format("deadlock: {} blocked stream head{}\n", r.blocked.size(), r.blocked.size() == 1 ? "" : "s");
  for (const Blocked& b : r.blocked) {
    out += fmt::format("  r{} #{} {}\n      waiting for {}\n", b.rank.v, b.index, b.text, b.waiting_for);
  }
  if (r.cycle_blocked.empty()) {
    out += "  no waiting cycle: some head waits for something that is never issued\n";
    return out;
  }
  out += "  cycle: ";
  for (int32_t x : r.cycle_blocked) out += fmt::format("r{} {} #{} -> ", r.blocked[x].rank.v, r.blocked[x].stream, r.blocked[x].index);
  const Blocked& first = r.blocked[r.cycle_blocked.front()];
  out += fmt::format("r{} {} #{}\n", first.rank.v, first.stream, first.index);
  return out;
}

}  // namespace ppstream
