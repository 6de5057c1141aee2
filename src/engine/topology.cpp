// Builds the static Topology of a ProgramSet: flat ids, streams, events, P2P pairing by
// channel position and the HSDP collective instances of an expanded set.
#include "engine/topology.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

namespace ppstream::engine {
namespace {

int32_t i32(size_t n) { return static_cast<int32_t>(n); }

// Ranks, program order and pp_rank consistency (docs/semantics.md "Program set").
void check_ranks(const ProgramSet& set, Topology& t) {
  const World& w = set.world;
  const auto world_error = world_size_error(w);  // dp() and rank ids are only defined without one
  if (world_error) t.errors.push_back({0, kNone, *world_error});
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    const int32_t pi = i32(p);
    t.rank_index.emplace_back(prog.rank.v, pi);
    if (prog.rank.v < 0) t.errors.push_back({pi, kNone, fmt::format("rank r{} is negative", prog.rank.v)});
    if (p > 0 && !(set.programs[p - 1].rank < prog.rank))
      t.errors.push_back({pi, kNone,
                          fmt::format("programs must be sorted by rank with no duplicates: r{} follows r{}",
                                      prog.rank.v, set.programs[p - 1].rank.v)});
    if (world_error) continue;
    const int32_t want = w.expanded ? prog.rank.v / w.dp() : prog.rank.v;
    if (want >= w.pp)
      t.errors.push_back({pi, kNone,
                          fmt::format("r{} is outside the world: its PP rank would be {}, but pp={} (dp={} expanded={})",
                                      prog.rank.v, want, w.pp, w.dp(), w.expanded ? 1 : 0)});
    else if (prog.pp_rank != want || prog.pp_rank < 0)
      t.errors.push_back({pi, kNone,
                          fmt::format("r{} has pp_rank {} but the world (pp={} dp={} expanded={}) gives {}",
                                      prog.rank.v, prog.pp_rank, w.pp, w.dp(), w.expanded ? 1 : 0, want)});
  }
  std::sort(t.rank_index.begin(), t.rank_index.end());
}

// A replica template holds replica 0 of an expanded world: one program per PP rank, rank
// pp_rank * dp (dp index 0).
void check_template(const ProgramSet& set, Topology& t) {
  const World& w = set.world;
  if (!w.expanded) {
    t.errors.push_back({0, kNone, "a replica template needs an expanded world (world.expanded)"});
    return;
  }
  if (world_size_error(w)) return;  // check_ranks reported it
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    if (prog.rank.v % w.dp() != 0)
      t.errors.push_back({i32(p), kNone, fmt::format("a replica template holds replica 0 only (ranks pp_rank * dp = "
                                                     "multiples of {}), but has r{}",
                                                     w.dp(), prog.rank.v)});
  }
}

// The names of the streams program `p` uses, in name order (the engine's tie-break key is the
// stream name, not the table position), and for each table id its slot in that order. An id
// outside the program's table is a rank-level error (the static rules then skip the program;
// the engine does not run): every instruction then goes to one placeholder slot.
std::vector<std::string_view> used_streams(const Program& prog, int32_t p, Topology& t, std::vector<uint16_t>& local) {
  const size_t table = prog.stream_names.size();
  local.assign(table, 0);
  std::vector<char> used(table, 0);
  std::vector<StreamId> ids;
  for (const Instr& in : prog.instrs) {
    if (in.stream.v >= table) {
      t.errors.push_back({p, kNone, fmt::format("stream id {} is not in r{}'s stream table ({} names)", in.stream.v,
                                                prog.rank.v, table)});
      local.assign(table, 0);
      return {"<bad stream id>"};
    }
    if (!used[in.stream.v]) used[in.stream.v] = 1, ids.push_back(in.stream);
  }
  std::sort(ids.begin(), ids.end(), [&](StreamId a, StreamId b) { return prog.stream_names[a.v] < prog.stream_names[b.v]; });
  std::vector<std::string_view> names;
  for (size_t k = 0; k < ids.size(); ++k) {
    local[ids[k].v] = static_cast<uint16_t>(k);
    names.emplace_back(prog.stream_names[ids[k].v]);
  }
  return names;
}

// Streams (slots in name order, so the tie-break key "stream name" is the slot) and events.
void index_streams_and_events(const ProgramSet& set, Topology& t, std::vector<int32_t>& ids) {
  std::vector<int32_t> events;  // per EventId (plus one slot for ids outside the table): local event, or kNone
  std::vector<uint16_t> local;  // per table id: the stream's slot on its rank
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    const auto& instrs = prog.instrs;
    const std::vector<std::string_view> names = used_streams(prog, i32(p), t, local);
    if (names.size() > kMaxStreamsPerRank)
      t.errors.push_back({i32(p), kNone,
                          fmt::format("{} streams on one rank; at most {} (the verifier keeps a clock per stream for "
                                      "every instruction: docs/verify.md \"Limits\")",
                                      names.size(), kMaxStreamsPerRank)});
    const int32_t sbase = t.stream_base.back();
    for (auto n : names) t.stream_names.emplace_back(n);
    t.stream_base.push_back(sbase + i32(names.size()));

    std::vector<int32_t> count(names.size(), 0);
    const size_t event_table = prog.event_names.size();
    events.assign(event_table + 1, kNone);
    int32_t n_events = 0;
    bool bad_event = false;
    const int32_t ebase = t.event_base.back();
    std::vector<int32_t> last_record;  // per local event: the latest RECORD so far in program order
    for (size_t i = 0; i < instrs.size(); ++i) {
      const Instr& in = instrs[i];
      const uint16_t sid = in.stream.v < local.size() ? local[in.stream.v] : 0;
      t.stream_of.push_back(sid);
      t.op_of.push_back(in.op);
      ++count[sid];
      int32_t event = kNone;
      if (in.op == OpKind::RECORD || in.op == OpKind::WAIT) {
        if (in.event.v >= event_table && !bad_event) {
          bad_event = true;  // a rank-level error: the static rules skip the program, the engine does not run
          t.errors.push_back({i32(p), kNone, fmt::format("event id {} is not in r{}'s event table ({} names)",
                                                         in.event.v, prog.rank.v, event_table)});
        }
        int32_t& slot = events[std::min<size_t>(in.event.v, event_table)];
        if (slot == kNone) {
          slot = n_events++;
          t.event_first_record.push_back(kNone);
          t.event_first_use.push_back(i32(i));
        }
        event = slot;
        auto& rec = t.event_first_record[ebase + event];
        if (in.op == OpKind::RECORD && rec == kNone) rec = i32(i);
        if (last_record.size() <= static_cast<size_t>(event)) last_record.resize(static_cast<size_t>(event) + 1, kNone);
        if (in.op == OpKind::RECORD) last_record[static_cast<size_t>(event)] = i32(i);
      }
      t.wait_record.push_back(in.op == OpKind::WAIT ? last_record[static_cast<size_t>(event)] : kNone);
      ids.push_back(event);
    }
    t.event_base.push_back(ebase + n_events);

    // Stream lists: counting sort of instruction indices by stream.
    const int32_t lbase = i32(t.stream_list.size());
    std::vector<int32_t> at(names.size());
    int32_t run = lbase;
    for (size_t s = 0; s < names.size(); ++s) {
      at[s] = run;
      t.stream_list_base.push_back(run);
      run += count[s];
    }
    t.stream_list.resize(static_cast<size_t>(run));
    const int32_t gbase = t.instr_base[p];
    for (size_t i = 0; i < instrs.size(); ++i) t.stream_list[at[t.stream_of[gbase + i]]++] = i32(i);
  }
  t.stream_list_base.push_back(i32(t.stream_list.size()));
}

ChannelList& channel(std::vector<ChannelList>& lists, int32_t peer, bool forward, bool send) {
  for (auto& l : lists)
    if (l.peer_prog == peer && l.forward == forward && l.send == send) return l;
  lists.push_back({peer, forward, send, {}});
  return lists.back();
}

// P2P ops get ids; each is paired with the same position on the opposite side's channel.
void pair_p2p(const ProgramSet& set, Topology& t, std::vector<int32_t>& ids) {
  t.channels.resize(set.programs.size());
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const auto& prog = set.programs[p];
    for (size_t i = 0; i < prog.instrs.size(); ++i) {
      const Instr& in = prog.instrs[i];
      if (in.op != OpKind::BATCH) continue;
      const int32_t g = t.instr_base[p] + i32(i);
      ids[g] = i32(t.op_instr.size());
      for (size_t k = 0; k < in.p2p.size(); ++k) {
        const P2POp& op = in.p2p[k];
        const int32_t id = i32(t.op_instr.size());
        t.op_instr.push_back(g);
        t.op_pos.push_back(i32(k));
        t.mirror.push_back(kNone);
        const int32_t peer = t.prog_of_rank(op.peer);
        if (peer == kNone || peer == i32(p)) {
          t.errors.push_back({i32(p), i32(i),
                              fmt::format("{} mb{} s{} names peer r{}, which is {}", to_string(op.kind), op.mb.v,
                                          op.stage.v, op.peer.v, peer == kNone ? "not in the set" : "itself")});
          continue;
        }
        channel(t.channels[p], peer, is_forward(op.kind), is_send(op.kind)).ops.push_back(id);
      }
    }
  }
  for (size_t p = 0; p < set.programs.size(); ++p)
    for (const ChannelList& l : t.channels[p]) {
      if (!l.send) continue;
      for (const ChannelList& r : t.channels[l.peer_prog]) {
        if (r.send || r.peer_prog != i32(p) || r.forward != l.forward) continue;
        const size_t n = std::min(l.ops.size(), r.ops.size());
        for (size_t k = 0; k < n; ++k) {
          t.mirror[l.ops[k]] = r.ops[k];
          t.mirror[r.ops[k]] = l.ops[k];
        }
      }
    }
}

std::string members_text(const Collective& c) {
  std::string out = fmt::format("{}[r{}", c.group, c.first.v);
  if (c.count > 1) out += fmt::format("..r{}", c.last().v);
  if (c.count > 1 && c.stride != 1) out += fmt::format(":{}", c.stride);
  return out + "]";
}

// Named groups (COLLECTIVE): every use of a name must give the same members and include its own
// rank, every member must be in the set; then the k-th COLLECTIVE of the group on each member
// forms instance k (members in rank order).
void form_named(const ProgramSet& set, Topology& t, bool ranks_ok) {
  std::unordered_map<std::string, int32_t> by_name;
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    for (size_t i = 0; i < prog.instrs.size(); ++i) {
      const Instr& in = prog.instrs[i];
      if (in.op != OpKind::COLLECTIVE) continue;
      if (in.coll.v >= prog.collectives.size()) {
        t.errors.push_back({i32(p), i32(i), fmt::format("collective id {} is not in r{}'s collective table ({} entries)",
                                                        in.coll.v, prog.rank.v, prog.collectives.size())});
        continue;
      }
      const Collective& c = prog.collectives[in.coll.v];
      const int32_t g = t.instr_base[p] + i32(i);
      auto [it, fresh] = by_name.emplace(c.group, i32(t.named.size()));
      if (fresh) {
        NamedGroup ng;
        ng.spec = c;
        if (c.count < 1 || c.stride < 1 || int64_t{c.first.v} + int64_t{c.count - 1} * c.stride > std::numeric_limits<int32_t>::max()) {
          t.errors.push_back({i32(p), i32(i), fmt::format("group {}: {} members {} apart from r{}; expected count >= 1, "
                                                          "stride >= 1 and ranks in int32",
                                                          c.group, c.count, c.stride, c.first.v)});
          ng.ok = false;
        } else {
          ng.member_prog.assign(static_cast<size_t>(c.count), kNone);
          ng.seq.assign(static_cast<size_t>(c.count), {});
          for (int32_t j = 0; j < c.count; ++j) {
            ng.member_prog[static_cast<size_t>(j)] = t.prog_of_rank(c.member(j));
            if (ng.member_prog[static_cast<size_t>(j)] == kNone) {
              t.errors.push_back({i32(p), i32(i), fmt::format("group {} names r{}, which is not in the set",
                                                              members_text(c), c.member(j).v)});
              ng.ok = false;
            }
          }
        }
        t.named.push_back(std::move(ng));
      }
      NamedGroup& ng = t.named[static_cast<size_t>(it->second)];
      if (!c.same_group(ng.spec)) {
        t.errors.push_back({i32(p), i32(i), fmt::format("group {} has members {} here but {} where it is first named",
                                                        c.group, members_text(c), members_text(ng.spec))});
        ng.ok = false;
        continue;
      }
      if (!ng.ok) continue;
      const auto j = c.index_of(prog.rank);
      if (!j) {
        t.errors.push_back({i32(p), i32(i), fmt::format("r{} issues a collective of group {}, which it is not a member of",
                                                        prog.rank.v, members_text(c))});
        ng.ok = false;
        continue;
      }
      ng.seq[static_cast<size_t>(*j)].push_back(g);
    }
  }
  if (!ranks_ok) return;
  for (size_t gi = 0; gi < t.named.size(); ++gi) {
    const NamedGroup& ng = t.named[gi];
    if (!ng.ok) continue;
    size_t rounds = 0;
    for (const auto& seq : ng.seq) rounds = std::max(rounds, seq.size());
    for (size_t k = 0; k < rounds; ++k) {
      const int32_t inst = i32(t.instances.size());
      CollectiveInstance ci;
      ci.named = i32(gi);
      ci.group = i32(gi);
      ci.k = i32(k);
      ci.members_begin = i32(t.instance_members.size());
      ci.size = ng.spec.count;
      t.instances.push_back(ci);
      for (const auto& seq : ng.seq) {
        const int32_t g = k < seq.size() ? seq[k] : kNone;
        t.instance_members.push_back(g);
        if (g == kNone) continue;
        CollectiveSlot& slot = t.coll[t.collective_slot(g)];
        slot.inst[slot.n++] = inst;
      }
    }
  }
}

// Collective slots; in an expanded set, the k-th collective of each group forms instance k.
// A replica template (Topology::replica_template) forms each instance of its members present
// in the set only (replica 0's), without the "expanded set lacks" error.
void form_collectives(const ProgramSet& set, Topology& t, std::vector<int32_t>& ids, bool ranks_ok) {
  const World& w = set.world;
  const size_t n = set.programs.size();
  for (GroupKind kind : kGroupKinds) {
    t.group_seq[kind].assign(n, {});
    t.group_of[kind].assign(n, kNone);
  }
  std::vector<std::pair<int32_t, uint8_t>> pending;  // (global id, phase kinds bitmask)
  for (size_t p = 0; p < n; ++p) {
    const auto& prog = set.programs[p];
    for (size_t i = 0; i < prog.instrs.size(); ++i) {
      const Instr& in = prog.instrs[i];
      if (!is_collective(in.op)) continue;
      const int32_t g = t.instr_base[p] + i32(i);
      ids[g] = i32(t.coll.size());
      t.coll.push_back({});
      CollectiveSlot& slot = t.coll.back();
      slot.comms = collective_comms(in, w);
      for (GroupKind kind : kGroupKinds) {
        if (!(slot.comms & comm_bit(kind))) continue;
        auto& seq = t.group_seq[kind][p];
        if (!seq.empty()) {
          slot.prev[kind] = seq.back();
          t.coll[ids[seq.back()]].next[kind] = g;
        }
        seq.push_back(g);
      }
    }
  }
  form_named(set, t, ranks_ok);
  if (!w.expanded || world_size_error(w)) return;
  for (size_t p = 0; p < n; ++p) {
    if (t.rank_error[p]) continue;  // a rank outside the world or out of order: no group
    const int32_t r = set.programs[p].rank.v;
    for (GroupKind kind : kGroupKinds) t.group_of[kind][p] = w.group_of(kind, r);
  }
  if (!ranks_ok) return;  // instances (the engine's) only for a set whose every rank is valid
  for (GroupKind kind : kGroupKinds) {
    std::vector<char> done(static_cast<size_t>(kind == GroupKind::SHARD ? w.pp * w.replicate : w.pp * w.shard), 0);
    for (size_t p = 0; p < n; ++p) {
      if (t.group_seq[kind][p].empty()) continue;
      const int32_t gid = t.group_of[kind][p];
      if (done[gid]) continue;
      done[gid] = 1;
      std::vector<int32_t> member_prog;
      bool complete = true;
      for (Rank m : t.group_ranks(kind, gid)) {
        const int32_t mp = t.prog_of_rank(m);
        if (mp == kNone && t.replica_template) continue;
        if (mp == kNone) {
          t.errors.push_back({i32(p), kNone,
                              fmt::format("expanded set lacks r{}, a member of the {} group of r{}", m.v,
                                          to_string(kind), set.programs[p].rank.v)});
          complete = false;
        }
        member_prog.push_back(mp);
      }
      if (!complete) continue;
      size_t rounds = 0;
      for (int32_t mp : member_prog) rounds = std::max(rounds, t.group_seq[kind][mp].size());
      for (size_t k = 0; k < rounds; ++k) {
        const int32_t inst = i32(t.instances.size());
        t.instances.push_back({kind, gid, i32(k), i32(t.instance_members.size()), i32(member_prog.size())});
        for (int32_t mp : member_prog) {
          const auto& seq = t.group_seq[kind][mp];
          const int32_t g = k < seq.size() ? seq[k] : kNone;
          t.instance_members.push_back(g);
          if (g == kNone) continue;
          CollectiveSlot& slot = t.coll[ids[g]];
          slot.inst[slot.n++] = inst;  // shard phase is formed before the replicate phase
        }
      }
    }
  }
}

}  // namespace

uint8_t collective_comms(const Instr& in, const World& w) {
  uint8_t m = 0;
  if (in.op == OpKind::UNSHARD || (in.op == OpKind::REDUCE_GRAD && w.shard > 1)) m |= comm_bit(GroupKind::SHARD);
  if (in.op == OpKind::REDUCE_GRAD && w.replicate > 1) m |= comm_bit(GroupKind::REPLICATE);
  return m;
}


int32_t Topology::prog_of_global(int32_t g) const {
  auto it = std::upper_bound(instr_base.begin(), instr_base.end(), g);
  return static_cast<int32_t>(it - instr_base.begin()) - 1;
}

const Instr& Topology::instr(int32_t g) const {
  const int32_t p = prog_of_global(g);
  return set->programs[p].instrs[g - instr_base[p]];
}

int32_t Topology::prog_of_rank(Rank r) const {
  auto it = std::lower_bound(rank_index.begin(), rank_index.end(), std::pair<int32_t, int32_t>{r.v, -1});
  return it != rank_index.end() && it->first == r.v ? it->second : kNone;
}

std::vector<Rank> Topology::group_ranks(GroupKind kind, int32_t group) const {
  return set->world.group_members(kind, group);
}

std::vector<Rank> Topology::instance_ranks(const CollectiveInstance& ci) const {
  if (ci.named == kNone) return group_ranks(ci.kind, ci.group);
  const Collective& c = named[static_cast<size_t>(ci.named)].spec;
  std::vector<Rank> out;
  for (int32_t j = 0; j < c.count; ++j) out.push_back(c.member(j));
  return out;
}

size_t Topology::member_collectives(const CollectiveInstance& ci, int32_t j) const {
  if (ci.named != kNone) return named[static_cast<size_t>(ci.named)].seq[static_cast<size_t>(j)].size();
  const int32_t pm = prog_of_rank(group_ranks(ci.kind, ci.group)[static_cast<size_t>(j)]);
  return pm == kNone ? 0 : group_seq[ci.kind][pm].size();
}

const std::string& Topology::event_name(int32_t prog, int32_t local) const {
  static const std::string kBadId = "<event id outside the table>";
  const Program& p = set->programs[prog];
  const EventId id = p.instrs[event_first_use[event_base[prog] + local]].event;
  return id.v < p.event_names.size() ? p.event_names[id.v] : kBadId;
}

Topology build_topology(const ProgramSet& set, bool replica_template) {
  Topology t;
  t.set = &set;
  t.replica_template = replica_template;
  size_t total = 0;
  t.instr_base.push_back(0);
  for (const auto& p : set.programs) {
    total += p.instrs.size();
    if (total > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 2))
      throw std::invalid_argument(fmt::format("program set has more than {} instructions",
                                              std::numeric_limits<int32_t>::max() / 2));
    t.instr_base.push_back(i32(total));
  }
  t.instr_id_.reserve(total);
  t.stream_of.reserve(total);
  t.op_of.reserve(total);
  t.stream_base.push_back(0);
  t.event_base.push_back(0);
  check_ranks(set, t);
  if (replica_template) check_template(set, t);
  const bool ranks_ok = t.errors.empty();
  index_streams_and_events(set, t, t.instr_id_);
  t.rank_error.assign(set.programs.size(), world_size_error(set.world) ? 1 : 0);
  for (const StructuralError& e : t.errors)
    if (e.instr == kNone) t.rank_error[e.prog] = 1;
  pair_p2p(set, t, t.instr_id_);
  form_collectives(set, t, t.instr_id_, ranks_ok);
  return t;
}

}  // namespace ppstream::engine
