// The stream-program IR: what every rank runs in one training step. Everything downstream
// (verify, simulate, execute, trace) consumes these values; see docs/semantics.md.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ppstream/program/streams.h"

namespace ppstream {

// Strong index types: a Rank is never confused with a Stage; no -1 placeholders (use optional).
#define PPSTREAM_STRONG_INDEX(Name)                                            \
  struct Name {                                                                \
    int32_t v = 0;                                                             \
    constexpr Name() = default;                                                \
    constexpr explicit Name(int32_t x) : v(x) {}                               \
    auto operator<=>(const Name&) const = default;                             \
  };
PPSTREAM_STRONG_INDEX(Rank)        // global rank id as printed `r3`
PPSTREAM_STRONG_INDEX(Stage)       // global virtual stage id `s7` (which PP rank holds it: Placement)
PPSTREAM_STRONG_INDEX(Microbatch)  // microbatch id `mb15`
#undef PPSTREAM_STRONG_INDEX

// Instruction kinds. Each instruction runs on one stream of its rank, in FIFO order there.
enum class OpKind : uint8_t {
  F,            // forward of (mb, stage) on a compute stream
  B,            // backward of (mb, stage): input grad (dx) + accumulate parameter grads; with a
                // bucket (reduce_buckets) only that bucket's layers, and only the last bucket
                // (the stage's first layers) yields the stage's input grad
  BATCH,        // one batch_isend_irecv of P2P ops; completes when every op is matched
  RECORD,       // record event on this stream: fires when all earlier work on the stream is done
  WAIT,         // this stream waits until the event has fired
  UNSHARD,      // all-gather the stage's parameter shards in its shard group
  RESHARD,      // free the stage's unsharded parameters (no communication)
  REDUCE_GRAD,  // the stage's gradient reduction: reduce-scatter (shard group), then
                // all-reduce (replicate group); the issuing stream waits for both (CommHandle.wait)
  OPT_STEP,     // optimizer step on the sharded parameters (one per rank per step)
  I,            // split backward, input-gradient half (dX) of (mb, stage): what SEND_B carries
  W,            // split backward, weight-gradient half (dW) of (mb, stage): accumulates the
                // parameter grads the stage's reduction sums (names as PyTorch's schedule actions)
  COLLECTIVE,   // a collective of an explicit, named group (Collective: op type + member ranks),
                // e.g. a lifted trace's embedding or gradient-norm all-reduce; not emitted by the
                // compiler (its HSDP collectives are UNSHARD / REDUCE_GRAD)
};

enum class P2PKind : uint8_t { SEND_F, RECV_F, SEND_B, RECV_B };

// One point-to-point operation inside a BATCH. mb/stage are always the *local* stage's:
// `SEND_B mb15 s7 ->r2` (s7's input grad to s6 on r2) is matched by `RECV_B mb15 s6 <-r3`.
struct P2POp {
  P2PKind kind = P2PKind::SEND_F;
  Microbatch mb;
  Stage stage;
  Rank peer;
  auto operator<=>(const P2POp&) const = default;
};

// The op type of a COLLECTIVE instruction (the names NCCL / HCCL give them).
enum class CollectiveType : uint8_t { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER };

// What a COLLECTIVE instruction does and with whom: its op type and its group, a name plus the
// member ranks. The members are a strided rank range, first, first + stride, …, first +
// (count - 1) · stride (count >= 1, stride >= 1): every group a lifted trace needs is one (a
// stage's DP ranks, a DP rank's first and last stage, every worker), and a range keeps a group
// of 16,384 members at 12 bytes. Every member names the group identically (same name, same
// members); the engine pairs the k-th COLLECTIVE of a group on each member (docs/semantics.md
// "Named collectives"). Text: `ALL_REDUCE clip[r0..r63]`, `ALL_REDUCE emb.0[r0..r12:12]`.
struct Collective {
  CollectiveType op = CollectiveType::ALL_REDUCE;
  std::string group;   // [a-z][a-z0-9_.]* (the stream-name alphabet)
  Rank first;          // lowest member
  int32_t stride = 1;  // >= 1
  int32_t count = 1;   // >= 1 members
  Rank member(int32_t j) const { return Rank{first.v + j * stride}; }
  Rank last() const { return member(count - 1); }
  // Member index of `r`, or nullopt when `r` is not in the group.
  std::optional<int32_t> index_of(Rank r) const {
    if (r.v < first.v || (r.v - first.v) % stride != 0 || (r.v - first.v) / stride >= count) return std::nullopt;
    return (r.v - first.v) / stride;
  }
  bool same_group(const Collective& o) const {
    return group == o.group && first == o.first && stride == o.stride && count == o.count;
  }
  bool operator==(const Collective&) const = default;
};

// An index into one Program's table of COLLECTIVE specs (Program::collectives), like EventId.
struct CollectiveId {
  uint32_t v = 0;
  constexpr CollectiveId() = default;
  constexpr explicit CollectiveId(uint32_t x) : v(x) {}
  auto operator<=>(const CollectiveId&) const = default;
};

// An index into one Program's table of event names (Program::event_names): a RECORD/WAIT's
// event. Events are rank-local, so an id means something only with its program. Equality, order
// (by index) and hashing; no conversion from an int or a name (Program::intern_event).
struct EventId {
  uint32_t v = 0;
  constexpr EventId() = default;
  constexpr explicit EventId(uint32_t x) : v(x) {}
  auto operator<=>(const EventId&) const = default;
};

// A part of a stage's parameter gradients (data_parallel.reduce_buckets): bucket `index` of
// `count` splits the stage's layers, in backward order (last layer first), into `count`
// contiguous groups; bucket 0 holds the last layers (bucket_layers below). {0, 1} is the whole
// stage, and is what every instruction of an unbucketed program holds. Printed `bucket0/2`.
struct Bucket {
  int32_t index = 0;
  int32_t count = 1;
  auto operator<=>(const Bucket&) const = default;
  bool whole() const { return count == 1; }
};
// The layers of bucket `b` of a stage of `layers` layers, as positions in backward order
// [first, end): [floor(index·L/count), floor((index+1)·L/count)). Bucket sizes differ by at most
// one layer; every layer is in exactly one bucket. count must be in [1, layers] (the config
// checks it: data_parallel.reduce_buckets <= the fewest layers of any stage).
struct BucketLayers {
  int32_t first = 0;
  int32_t end = 0;
  int32_t size() const { return end - first; }
};
inline BucketLayers bucket_layers(Bucket b, int32_t layers) {
  const auto at = [&](int32_t j) { return static_cast<int32_t>(static_cast<int64_t>(j) * layers / b.count); };
  return {at(b.index), at(b.index + 1)};
}
// The share of the stage's layers (and so of its backward time and gradient bytes) that bucket
// `b` holds: bucket_layers(b, layers).size() / layers; 1 for the whole stage.
inline double bucket_share(Bucket b, int32_t layers) {
  return b.whole() || layers <= 0 ? 1.0 : static_cast<double>(bucket_layers(b, layers).size()) / layers;
}

// One instruction. Only the fields its kind uses are meaningful; the others stay default so
// that equality and hashing are well defined (the parser and builders guarantee it).
struct Instr {
  OpKind op = OpKind::F;
  StreamId stream = streams::kCompute;  // an id in its Program's stream table (program/streams.h)
  Microbatch mb;               // F, B
  Stage stage;                 // F, B, UNSHARD, RESHARD, REDUCE_GRAD
  std::vector<P2POp> p2p;      // BATCH: ops in issue order (cpu-serial executes them in this order)
  EventId event;               // RECORD, WAIT: e.g. "compute_ready[s7]", an id in its Program's event table
  Bucket bucket;               // B, W: the piece of the stage's backward over these layers only;
                               // REDUCE_GRAD: the gradients of these layers only (whole: all)
  CollectiveId coll;           // COLLECTIVE: an id in its Program's collective table
  bool operator==(const Instr&) const = default;
};

// Where the virtual stages live (the one stage → PP rank map; every consumer calls the helpers
// below). LOOP: chunk c of PP rank r is stage c*pp + r (interleaved 1F1B, Narayanan et al.
// SC'21). V: vpp == 2 and PP rank r holds stages r and 2pp-1-r (ZBV / DualPipeV, Qi et al. 2024
// "Pipeline Parallelism with Controllable Memory"): the chain runs down the ranks and back up, so
// stages pp-1 and pp are both on the last rank and the transfer between them is local (no P2P:
// a direct dependency in program order on the compute stream, as between any two stages of one
// rank; docs/semantics.md "Placement").
enum class Placement : uint8_t { LOOP, V };

// The world a program set describes. A compiled set holds either one pipeline replica
// (ranks = PP ranks 0..pp-1, HSDP peers outside the set) or the whole expanded world
// (rank = pp_rank * dp + dp_index, dp_index = replicate_index * shard + shard_index).
// The two HSDP communication groups of a rank: the shard group (reduce-scatter / all-gather)
// and the replicate group (all-reduce across replicas).
enum class GroupKind : uint8_t { SHARD, REPLICATE };
inline const char* to_string(GroupKind k) { return k == GroupKind::SHARD ? "shard" : "replicate"; }

struct World {
  int32_t pp = 1;          // pipeline_parallel_size
  int32_t vpp = 1;         // virtual stages per PP rank
  int32_t shard = 1;       // shard group size (1: no sharding)
  int32_t replicate = 1;   // replicate group size
  bool expanded = false;   // true: every DP rank is in the set
  Placement placement = Placement::LOOP;  // V requires vpp == 2 (world_size_error)
  auto operator<=>(const World&) const = default;
  int32_t dp() const { return shard * replicate; }

  // The one HSDP group formula (engine, verifier, replay and the Python runtime use it; see
  // docs/semantics.md). Expanded ranks are numbered pp_rank*dp + replicate_index*shard +
  // shard_index. Group ids: shard group = rank / shard (pp*replicate of them); replicate group =
  // pp_rank*shard + shard_index (pp*shard of them). Members are listed in rank order, so a
  // rank's index in its shard group is its shard_index and in its replicate group its
  // replicate_index. Ranks and ids are not range-checked here (callers hold valid ones).
  int32_t group_of(GroupKind kind, int32_t rank) const {
    return kind == GroupKind::SHARD ? rank / shard : rank / dp() * shard + rank % shard;
  }
  std::vector<Rank> group_members(GroupKind kind, int32_t group) const {
    std::vector<Rank> out;
    if (kind == GroupKind::SHARD) {
      for (int32_t j = 0; j < shard; ++j) out.push_back(Rank{group * shard + j});
    } else {
      const int32_t pp_rank = group / shard, shard_index = group % shard;
      for (int32_t j = 0; j < replicate; ++j) out.push_back(Rank{pp_rank * dp() + j * shard + shard_index});
    }
    return out;
  }
};

// How gradients are reduced (the reduction placement policy of the lowering).
enum class ReducePolicy : uint8_t { NONE, INLINE, ASYNC };
// Data parallelism: FSDP = sharded, replicate 1; HSDP = shard × replicate; DDP = replicate only
// (hsdp with shard_size 1: no UNSHARD/RESHARD, REDUCE_GRAD is a plain all-reduce).
enum class DPMode : uint8_t { NONE, FSDP, HSDP };

// One rank's program: instructions in host issue order, and the names of the streams they run
// on (StreamId indexes `stream_names`; the well-known streams come first, see streams.h) and of
// the events they record and wait (EventId indexes `event_names`, in order of first interning).
// The intern_* calls scan the table; code interning many names uses a NameIndex (name_index.h).
struct Program {
  Rank rank;
  int32_t pp_rank = 0;
  std::vector<Instr> instrs;
  std::vector<std::string> stream_names{streams::kWellKnown.begin(), streams::kWellKnown.end()};
  std::vector<std::string> event_names{};  // {}: aggregate initialisation may leave it out
  std::vector<Collective> collectives{};   // COLLECTIVE specs, indexed by CollectiveId

  // The id of `name` in this program's table, appending it on first use. Names are not checked
  // here (the parsers do: is_valid_stream_name in format.h).
  StreamId intern_stream(std::string_view name);
  // The id of `name` if the table holds it.
  std::optional<StreamId> find_stream(std::string_view name) const;
  // The name of `id`; std::out_of_range for an id outside the table.
  const std::string& stream_name(StreamId id) const { return stream_names.at(id.v); }
  // The same for events (names checked by the parsers: is_valid_event_name).
  EventId intern_event(std::string_view name);
  std::optional<EventId> find_event(std::string_view name) const;
  const std::string& event_name(EventId id) const { return event_names.at(id.v); }
  // The id of `c` in the collective table, appending it on first use (linear scan).
  CollectiveId intern_collective(const Collective& c);
  // The spec of `id`; std::out_of_range for an id outside the table.
  const Collective& collective(CollectiveId id) const { return collectives.at(id.v); }
  // Equal when rank, pp_rank and the instructions are, streams and events compared by name and
  // collectives by value (two tables may list the same entries in another order, or hold
  // entries no instruction uses).
  bool operator==(const Program& o) const;
};

// All ranks' programs for one step plus what the verifier needs to know about them.
struct ProgramSet {
  World world;
  DPMode mode = DPMode::NONE;               // NONE: no REDUCE_GRAD/UNSHARD/RESHARD at all
  ReducePolicy policy = ReducePolicy::NONE;  // NONE iff mode == NONE
  std::vector<Program> programs;             // sorted by rank
  // Every local virtual stage of a rank is "managed" (reduced once per step) when mode != NONE;
  // it is sharded (UNSHARD/RESHARD once per step) when additionally world.shard > 1.
  bool sharded() const { return mode != DPMode::NONE && world.shard > 1; }
  bool operator==(const ProgramSet&) const = default;
};

// The stage → PP rank map (one definition; see Placement). Stages in [0, pp*vpp).
inline int32_t pp_rank_of_stage(Stage s, int32_t pp, Placement pl) {
  return pl == Placement::V && s.v >= pp ? 2 * pp - 1 - s.v : s.v % pp;
}
inline int32_t pp_rank_of_stage(Stage s, const World& w) { return pp_rank_of_stage(s, w.pp, w.placement); }
// Chunk c of a rank: its c-th stage in stage order (the order of its layer string).
inline int32_t chunk_of_stage(Stage s, int32_t pp) { return s.v / pp; }
inline Stage stage_of_chunk(int32_t pp_rank, int32_t chunk, int32_t pp, Placement pl) {
  return Stage{pl == Placement::V && chunk == 1 ? 2 * pp - 1 - pp_rank : chunk * pp + pp_rank};
}
// The stages PP rank `pp_rank` holds, in stage order (chunk order).
std::vector<Stage> local_stages(int32_t pp_rank, const World& w);
const char* to_string(Placement p);                            // "loop" | "v"
std::optional<Placement> parse_placement(const std::string& s);
const char* to_string(OpKind k);
const char* to_string(P2PKind k);
const char* to_string(CollectiveType k);  // "ALL_REDUCE" | "ALL_GATHER" | "REDUCE_SCATTER"
std::optional<CollectiveType> parse_collective_type(const std::string& s);
const char* to_string(ReducePolicy p);
const char* to_string(DPMode m);
std::optional<OpKind> parse_op_kind(const std::string& s);
std::optional<P2PKind> parse_p2p_kind(const std::string& s);
std::optional<ReducePolicy> parse_reduce_policy(const std::string& s);  // "none" | "inline" | "async"
std::optional<DPMode> parse_dp_mode(const std::string& s);              // "none" | "fsdp" | "hsdp"
// PP rank of a rank of the set: rank / dp when the set is expanded, else the rank itself.
inline int32_t pp_rank_of(Rank r, const World& w) { return w.expanded ? r.v / w.dp() : r.v; }
bool is_send(P2PKind k);
// The op that matches `op` on its peer, as written there (`self` = the rank `op` is on):
// SEND_F mb s ->q ↔ RECV_F mb s+1 <-self, SEND_B mb s ->q ↔ RECV_B mb s-1 <-self. The one
// definition of P2P pairing (engine, verifier, lowering, simulator metrics, analyzer).
P2POp mirror_of(const P2POp& op, Rank self);
bool is_forward(P2PKind k);
// The sizes a World may have (the config's limits): every size >= 1, vpp == 2 for V placement, pp * vpp <= 65536 virtual
// stages, and pp * shard * replicate ranks numbered in int32 (dp() and rank ids never overflow).
// Returns what is wrong, e.g. "world pp=2 shard=65536 replicate=65536: 8589934592 ranks; ...",
// or nullopt when the sizes are usable.
std::optional<std::string> world_size_error(const World& w);

}  // namespace ppstream

template <>
struct std::hash<ppstream::EventId> {
  size_t operator()(ppstream::EventId e) const noexcept { return e.v; }
};
