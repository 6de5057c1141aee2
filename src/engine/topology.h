// Topology: the static structure of a ProgramSet that the engine and the verifier share —
// flat instruction ids, streams, events, P2P channel pairing and HSDP collective instances.
// Built once per set in O(instructions); nothing here depends on time or platform.
#pragma once

#include <array>
#include <cassert>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ppstream/engine/engine.h"
#include "ppstream/program/ir.h"

namespace ppstream::engine {

inline constexpr int32_t kNone = -1;  // "no such id" inside flat tables (never in the IR)
// Streams one rank may use. Compiled programs use at most five (compute, p2p or two p2p.E,
// reduce, fsdp); the verifier's vector clocks take 4 bytes × streams per instruction, so the
// cap bounds verify memory at 256 bytes per instruction (docs/verify.md "Limits").
inline constexpr size_t kMaxStreamsPerRank = 64;

// A problem that makes the set impossible to run (unknown peer, unsorted ranks, …).
struct StructuralError {
  int32_t prog = 0;       // program index
  int32_t instr = kNone;  // instruction index, kNone when rank-level
  std::string message;
};

using ppstream::GroupKind;  // program/ir.h, beside World's group formula (and its to_string)
inline constexpr std::array<GroupKind, 2> kGroupKinds = {GroupKind::SHARD, GroupKind::REPLICATE};

// One value per HSDP communicator (shard group, replicate group), indexed by GroupKind.
template <class T>
class PerGroup {
 public:
  constexpr PerGroup() = default;
  constexpr explicit PerGroup(T both) : v_{both, both} {}
  T& operator[](GroupKind k) { return v_[static_cast<size_t>(k)]; }
  const T& operator[](GroupKind k) const { return v_[static_cast<size_t>(k)]; }

 private:
  std::array<T, 2> v_{};
};

// One ordered P2P channel seen from one side: the ops this program posts towards `peer_prog`
// in one direction (F or B), in program order. Position k pairs with position k of the
// opposite side's list (docs/semantics.md: per-channel FIFO).
struct ChannelList {
  int32_t peer_prog = 0;
  bool forward = true;        // SEND_F/RECV_F vs SEND_B/RECV_B
  bool send = true;           // this side sends
  std::vector<int32_t> ops;   // op ids
};

// The k-th collective of one HSDP group: member j is the group's j-th rank (in rank order);
// `members` holds each member's global instruction id, or kNone if it has no k-th collective.
struct CollectiveInstance {
  GroupKind kind = GroupKind::SHARD;  // HSDP instances (named == kNone)
  int32_t group = 0;           // group id (see group_ranks)
  int32_t k = 0;               // position in the group's sequence
  int32_t members_begin = 0;   // into Topology::instance_members
  int32_t size = 0;            // group size
  int32_t named = kNone;       // a COLLECTIVE's instance: its index in Topology::named (kind unused)
};

// UNSHARD, REDUCE_GRAD and COLLECTIVE: the instructions that form collective slots.
inline bool is_collective(OpKind k) {
  return k == OpKind::UNSHARD || k == OpKind::REDUCE_GRAD || k == OpKind::COLLECTIVE;
}

// A named group of COLLECTIVE instructions (ir.h Collective): its members (by the first
// instruction that names it) and, per member, its COLLECTIVEs in that group in program order.
// A group is its own communicator: it is on no HSDP communicator chain (collective_comms 0).
struct NamedGroup {
  Collective spec;                       // op type: the first instruction's
  std::vector<int32_t> member_prog;      // per member index: its program, kNone when absent
  std::vector<std::vector<int32_t>> seq; // per member index: global ids, in program order
  bool ok = true;                        // no structural error (instances formed)
};

// Bit of a GroupKind in a communicator mask.
inline constexpr uint8_t comm_bit(GroupKind k) { return static_cast<uint8_t>(1u << static_cast<unsigned>(k)); }
// The communicators (shard / replicate group) a collective instruction runs on, as a mask of
// comm_bit: UNSHARD = all-gather in the shard group; REDUCE_GRAD = reduce-scatter in the shard
// group (when shard > 1), then all-reduce in the replicate group (when replicate > 1). The one
// definition, used for instances, communicator order (engine) and the verifier.
uint8_t collective_comms(const Instr& in, const World& w);

// The group phases one collective instruction goes through, in order: `inst[phase]` for
// phase < n (the shard phase before the replicate phase). n == 0: a local collective
// (non-expanded set, or both groups of size 1). `prev`/`next`: the rank's previous / next
// collective on the same communicator in issue order (global ids, kNone at the ends) —
// collectives on one communicator run one after another in issue order, across all streams of
// the rank (docs/semantics.md "Communicators").
struct CollectiveSlot {
  int32_t inst[2] = {kNone, kNone};  // by phase
  uint8_t n = 0;
  uint8_t comms = 0;  // collective_comms of the instruction
  PerGroup<int32_t> prev{kNone};
  PerGroup<int32_t> next{kNone};
};

struct Topology {
  const ProgramSet* set = nullptr;
  // Built by build_topology(set, true): `set` is replica 0 of an expanded world (one program per
  // PP rank) and each HSDP instance has only that replica's member (CollectiveInstance::size 1):
  // the engine's run of it is the template of every replica (ppstream/engine/replica_tape.h).
  // Not for the verifier (instance_ranks and member_collectives assume every member present).
  bool replica_template = false;
  std::vector<StructuralError> errors;  // non-empty: the engine must not run the set
  // Per program: 1 when that program has a rank-level error (rank order or range, pp_rank,
  // stream count; every program when the world sizes have one). Rank and stage arithmetic on it is undefined, so the verifier's static
  // rules skip it, and every reference into it (channels, mirrors, groups).
  std::vector<char> rank_error;
  bool skip(int32_t prog) const { return rank_error[prog] != 0; }

  // Instructions: global id g = instr_base[prog] + index.
  std::vector<int32_t> instr_base;      // size programs+1
  std::vector<uint16_t> stream_of;      // rank-local stream id (ids follow name order)
  // Each instruction's op, densely: the engine's hot paths read it here rather than from the
  // (much larger) Instr, which costs a cache miss per event on a large set.
  std::vector<OpKind> op_of;
  // The id an instruction's op gives it (one table: an instruction has at most one of them).
  // BATCH: its first P2P op id (its ops are consecutive ids, in BATCH order).
  int32_t first_op(int32_t g) const { return id_of(g, OpKind::BATCH, OpKind::BATCH); }
  // RECORD / WAIT: the rank-local id of its event (slot event_base[prog] + id).
  int32_t event_id(int32_t g) const { return id_of(g, OpKind::RECORD, OpKind::WAIT); }
  int32_t event_slot(int32_t prog, int32_t index) const { return event_base[prog] + event_id(global(prog, index)); }
  // UNSHARD / REDUCE_GRAD / COLLECTIVE: its index in `coll`.
  int32_t collective_slot(int32_t g) const {
    assert(is_collective(instr(g).op));
    return instr_id_[g];
  }

  // Streams: slot = stream_base[prog] + local id; each lists its instruction indices.
  std::vector<int32_t> stream_base;     // size programs+1
  std::vector<std::string> stream_names;
  std::vector<int32_t> stream_list_base;  // size slots+1
  std::vector<int32_t> stream_list;       // instruction indices (rank-local)

  // Events: slot = event_base[prog] + local id.
  std::vector<int32_t> event_base;      // size programs+1
  std::vector<int32_t> event_first_record;  // instruction index of the first RECORD, or kNone
  // WAIT: the RECORD it synchronizes with, the most recent RECORD of its event before it in
  // program order (the CUDA/ACL rule, docs/semantics.md "Events"); kNone when none precedes it.
  // Per global instruction (kNone for other ops). Verifier, simulator and replay follow it.
  std::vector<int32_t> wait_record;
  // The RECORD the engine (simulator, replay) lets WAIT `index` of `prog` wait for: wait_record,
  // or, for a WAIT with no RECORD before it (an [event] violation, no happens-before edge), the
  // event's first RECORD, so that such a run still ends; kNone when the event is never recorded.
  int32_t synced_record(int32_t prog, int32_t index) const {
    const int32_t rec = wait_record[static_cast<size_t>(global(prog, index))];
    return rec != kNone ? rec : event_first_record[static_cast<size_t>(event_slot(prog, index))];
  }
  std::vector<int32_t> event_first_use;     // first RECORD or WAIT naming it (for its name)

  // P2P ops: op id → owning global instruction and position in its BATCH; the mirror op
  // paired by channel position (kNone when the other side has fewer ops on the channel).
  std::vector<int32_t> op_instr;
  std::vector<int32_t> op_pos;
  // The number of P2P ops of BATCH g, from op_instr (its ops are consecutive from first_op(g)):
  // one cache line the engine reads next anyway, where Instr::p2p.size() is a miss on a large set.
  int32_t batch_ops(int32_t g) const {
    const auto first = static_cast<size_t>(first_op(g));
    size_t k = first;
    while (k < op_instr.size() && op_instr[k] == g) ++k;
    return static_cast<int32_t>(k - first);
  }
  std::vector<int32_t> mirror;
  std::vector<std::vector<ChannelList>> channels;  // per program

  // Collectives (expanded sets only form instances).
  std::vector<CollectiveSlot> coll;
  std::vector<CollectiveInstance> instances;
  std::vector<int32_t> instance_members;
  // Per group kind, per program: the program's collective instructions (global ids) on that
  // communicator, in program (= issue) order — filled for every set; instances and group ids
  // (group_of) only for expanded sets.
  PerGroup<std::vector<std::vector<int32_t>>> group_seq;
  PerGroup<std::vector<int32_t>> group_of;
  // Named groups (COLLECTIVE), in order of first use; formed for every set, expanded or not.
  std::vector<NamedGroup> named;
  // The ranks of an instance's group (member j at index j), and how many collectives member j
  // issues in that group.
  std::vector<Rank> instance_ranks(const CollectiveInstance& ci) const;
  size_t member_collectives(const CollectiveInstance& ci, int32_t j) const;

  std::vector<std::pair<int32_t, int32_t>> rank_index;  // (rank, prog) sorted by rank

  int32_t programs() const { return static_cast<int32_t>(instr_base.size()) - 1; }
  int32_t global(int32_t prog, int32_t index) const { return instr_base[prog] + index; }
  int32_t prog_of_global(int32_t g) const;   // O(log programs)
  const Instr& instr(int32_t g) const;
  const Program& program(int32_t prog) const { return set->programs[prog]; }
  int32_t streams(int32_t prog) const { return stream_base[prog + 1] - stream_base[prog]; }
  const std::string& stream_name(int32_t prog, int32_t local) const {
    return stream_names[stream_base[prog] + local];
  }
  // Program index of a rank, or kNone when the rank is not in the set.
  int32_t prog_of_rank(Rank r) const;
  // Ranks of a group (in rank order), from the World formula in docs/semantics.md.
  std::vector<Rank> group_ranks(GroupKind kind, int32_t group) const;
  const P2POp& op(int32_t op_id) const { return instr(op_instr[op_id]).p2p[op_pos[op_id]]; }
  const std::string& event_name(int32_t prog, int32_t local) const;

 private:
  friend Topology build_topology(const ProgramSet& set, bool replica_template);
  std::vector<int32_t> instr_id_;  // per global instruction: the id above, kNone for other ops
  int32_t id_of(int32_t g, [[maybe_unused]] OpKind a, [[maybe_unused]] OpKind b) const {
    assert(instr(g).op == a || instr(g).op == b);
    return instr_id_[g];
  }
};

// Builds the topology. Bad input lands in `errors`; throws std::invalid_argument only when the
// set has too many instructions for 32-bit ids (over 2^30). `replica_template`: see
// Topology::replica_template (a set with a program outside replica 0 is an error).
Topology build_topology(const ProgramSet& set, bool replica_template = false);

// run_engine on a topology already built for `topo.set` (the simulator builds one per set and
// shares it with the verifier): throws std::invalid_argument naming the first structural error.
EngineResult run_checked(const Topology& topo, const EngineOptions& opts);

}  // namespace ppstream::engine
