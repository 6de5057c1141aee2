// The internal timeline model every trace reader maps into and every analysis reads.
// Times are integer nanoseconds on the producer's clock (exact for µs inputs with 3 decimals);
// see docs/analyze.md for how each format maps into it.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ppstream/program/ir.h"

namespace ppstream::analyze {

// Bad or unknown trace input. The message names the file, the byte offset or event index,
// the offending value and what was expected.
struct TraceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a slice occupies its stream with. MEMORY (memcpy/memset) counts neither as compute nor
// as communication, like Holistic Trace Analysis does.
enum class SliceKind : uint8_t { COMPUTE, COLLECTIVE, P2P, STREAM_WAIT, HOST, MEMORY };
const char* to_string(SliceKind k);
std::optional<SliceKind> parse_slice_kind(std::string_view s);  // "compute", "p2p", …

// What a communication slice does, classified once by its format's mapper from the producer's
// own vocabulary (docs/analyze.md "Reductions"): NCCL kernel names and Kineto's "Collective name",
// HCCL hcom_<op> names, MindSpore communication primitives, our instructions' ops. REDUCE is any
// other reduction: a rooted reduce (ncclReduce, hcom_reduce) or our REDUCE_GRAD (reduce-scatter
// in the shard group, then all-reduce in the replicate group; a trace does not say which ran).
enum class CollectiveOp : uint8_t { OTHER, ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, BROADCAST, SEND, RECV, REDUCE };
const char* to_string(CollectiveOp op);  // "all-reduce", "reduce-scatter", …, "other"
// A reduction sums data across ranks: all-reduce, reduce-scatter and reduce (gradient reductions).
constexpr bool is_reduction(CollectiveOp op) {
  return op == CollectiveOp::ALL_REDUCE || op == CollectiveOp::REDUCE_SCATTER || op == CollectiveOp::REDUCE;
}

// Interns strings once at read time so slices hold 4-byte ids; id 0 is always "".
class StringTable {
 public:
  StringTable();
  uint32_t intern(std::string_view s);
  const std::string& str(uint32_t id) const { return strings_.at(id); }
  size_t size() const { return strings_.size(); }

 private:
  std::deque<std::string> strings_;  // deque: views into it stay valid while it grows
  std::unordered_map<std::string_view, uint32_t> ids_;
};

// One P2P operation inside a P2P slice (a BATCH may hold several).
enum class P2PDir : uint8_t { SEND, RECV };
// Channels are per (sender, receiver, phase) and FIFO (docs/semantics.md).
struct P2PPart {
  P2PDir dir = P2PDir::SEND;
  Rank peer;
  char phase = 0;  // 'F' (activations), 'B' (input grads) or 0 when the trace does not say
  std::optional<P2POp> op;  // the op as written in our traces' BATCH text (mb, stage); else absent
};

// One interval on one stream of one rank. Fields are ordered by size so that a slice stays
// 104 bytes (docs/analyze.md "Memory bound").
struct Slice {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  uint32_t stream = 0;  // index into RankTimeline::streams
  uint32_t name = 0;    // interned: our format's canonical instruction text, or the kernel name
  uint32_t group = 0;   // interned communication group ("" when none or unknown)
  uint32_t event = 0;   // interned event a STREAM_WAIT waits for ("" when unknown)
  // Index into RankTimeline::steps of the step this slice belongs to (docs/analyze.md "Steps"):
  // the step whose ProfilerStep range holds its launch, else whose marker started last at or
  // before its start; absent when none (before the first marker, launched before profiling).
  std::optional<uint32_t> step;
  // STREAM_WAIT slices whose trace says which stream the awaited event was recorded on
  // (Kineto "Stream Wait Event" args.wait_on_stream >= 0): index into RankTimeline::wait_sources.
  std::optional<uint32_t> wait_source;
  uint64_t bytes = 0;   // payload bytes of communication, 0 when unknown
  std::vector<P2PPart> p2p;  // P2P only; empty when the trace does not say (e.g. NCCL SendRecv)
  // Kineto device work carrying args.correlation: the ts of its cuda_runtime launch, or
  // launch_unseen when the launch is not in the trace (launched before profiling began).
  std::optional<int64_t> launch_ns;
  SliceKind kind = SliceKind::COMPUTE;
  CollectiveOp op = CollectiveOp::OTHER;  // COLLECTIVE and P2P slices: what they do, when known
  bool launch_unseen = false;
  // Bounds (docs/analyze.md): readers reject |ts| > kMaxAbsTsNs and drop durations outside
  // [0, kMaxDurNs], so start, end and any difference of two of them fit in int64.
  int64_t end_ns() const { return start_ns + dur_ns; }
};

// The reduction figures' slices (docs/analyze.md "Reductions"): collectives whose op reduces.
inline bool is_reduction(const Slice& s) { return s.kind == SliceKind::COLLECTIVE && is_reduction(s.op); }

inline constexpr int64_t kMaxAbsTsNs = int64_t{4'000'000'000'000'000'000};  // 4e15 µs ≈ 126 years
inline constexpr int64_t kMaxDurNs = int64_t{7} * 24 * 3600 * 1'000'000'000;  // 7 days

// A device stream (or, for HOST slices, a host lane) of one rank.
struct StreamInfo {
  std::string name;  // "compute", "p2p.2", "Stream 3", "stream 7"
  int64_t id = 0;    // the producer's id (tid / stream number)
};

// What a trace says about the event a stream wait waits for (Kineto PR #808: "Stream Wait Event"
// carries wait_on_stream and wait_on_cuda_event_record_corr_id). The wait is released by the last
// device slice launched on `stream` before the cudaEventRecord call (HTA's rule, HTA PR #121), or,
// when the record call is not in the trace, by the last slice of `stream` ending at the wait's end.
struct WaitSource {
  uint32_t stream = 0;                 // index into RankTimeline::streams: where the event was recorded
  std::optional<int64_t> record_corr;  // wait_on_cuda_event_record_corr_id when > 0
  std::optional<int64_t> record_ns;    // ts of that cudaEventRecord call, when it is in the trace
};

// Which rule attributed a stream wait to the slice that released it (docs/analyze.md).
enum class WaitRule : uint8_t {
  RECORD,  // the record call's correlation: the last slice launched on the recorded stream before it
  STREAM,  // wait_on_stream only: the last slice of the recorded stream ending at the wait's end
  TIMING,  // the trace says neither: the slice on any other stream ending last at the wait's end
};
const char* to_string(WaitRule r);  // "record", "stream", "timing"

// One profiler step window on a rank ("ProfilerStep#551", our "step 3").
struct StepMarker {
  int64_t step = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// Everything known about one rank: its streams, slices sorted by (start, stream), step markers.
struct RankTimeline {
  Rank rank;
  std::optional<int32_t> pp_rank;  // our format's metadata, when given
  std::string source;              // file the slices came from
  std::vector<StreamInfo> streams;
  std::vector<Slice> slices;
  std::vector<StepMarker> steps;   // sorted by start
  std::vector<WaitSource> wait_sources;  // Slice::wait_source indexes it
  // The producer's base time: ns since the Unix epoch of ts 0 (Kineto baseTimeNanoseconds), when
  // the trace gives it; ranks that all have one are put on one clock by it (docs/analyze.md "Positions").
  std::optional<int64_t> base_ns;
  uint32_t stream_index(std::string_view name, int64_t id);  // finds or adds
};

// Sets Slice::step for every slice of `tl` (slices and steps sorted); rule in Slice::step.
void assign_steps(RankTimeline& tl);

// A row of a producer's step_trace_time.csv; values keep the producer's unit (µs).
struct StepTraceRow {
  std::string source;
  std::string producer;               // "MindSpore", "torch_npu" or "unknown"
  std::string type;                   // "rank", "stage" or "" (per-rank file)
  std::string index;                  // rank id or stage tuple as written
  std::optional<int64_t> step;
  std::vector<std::pair<std::string, double>> values;  // column → value (µs)
  std::optional<double> get(std::string_view column) const;
};

// One communication op of an Ascend communication.json (per-rank or cluster form).
struct CommOpRecord {
  std::string source;
  std::string group;   // cluster form: the rank tuple "(0, 1)"; per-rank form: "collective"/"p2p"
  std::string step;    // "step", "step1", …
  std::string op;      // "hcom_broadcast__501_0@…"
  std::string rank;    // rank id as written
  double elapse_ms = 0, transit_ms = 0, wait_ms = 0, sync_ms = 0, idle_ms = 0;
  double wait_ratio = 0, sync_ratio = 0;
  // Joined with the rank's timeline (Ascend dirs): the "Group N Communication" op of the same
  // name (the record's op up to '@'): its group, bytes and duration; empty when not in the timeline.
  std::string lane_group{};
  uint64_t lane_bytes = 0;
  std::optional<double> lane_ms{};
};

// One link of an op in an Ascend communication_matrix.json: "src-dst" as written, ranks local to
// the op's group (the group is the text after '@' in the op name), e.g. hcom_send 0-8 over RDMA.
struct CommLinkRecord {
  std::string source;
  std::string rank;    // the rank whose file this is (profiler_info), "" when unknown
  std::string step, kind, op;  // "step2", "p2p" | "collective", "hcom_send__822_0@…"
  int64_t src = 0, dst = 0;    // group-local ranks as written
  std::string transport;  // "RDMA", "HCCS", "LOCAL", …
  double size_mb = 0, time_ms = 0, bandwidth_gbps = 0;
  // Global ranks through the group's rank list (profiler_metadata.json parallel_group_info),
  // absent when no list names the op's group: src/dst then stay group-local (never guessed).
  std::optional<int64_t> src_global{}, dst_global{};
  // Joined with the rank's timeline: the duration (ms) of the HCCL lane op of the same name.
  std::optional<double> lane_ms{};
};

// A communication group's rank list from profiler_metadata.json "parallel_group_info"
// (torch_npu and MindSpore): group id (HCCL communicator name) → {group_name, global_ranks}.
// communication_matrix.json names the group by msprof-analyze's double hash of the id.
struct ParallelGroup {
  std::string source;
  std::string id;                   // the key, e.g. "10.0.0.1%eth0_60000_0_1733…"
  std::string name;                 // "group_name", e.g. "pp" or "hccl_world_group"
  std::string hash;                 // double_hash(id) as decimal text (docs/analyze.md)
  std::vector<int64_t> global_ranks;  // sorted: group-local rank i is global_ranks[i]
};

// All inputs of one analysis, loaded once.
struct TraceSet {
  StringTable strings;
  std::vector<RankTimeline> ranks;          // sorted by rank after loading
  std::vector<StepTraceRow> step_trace;
  std::vector<CommOpRecord> comm_ops;
  std::vector<CommLinkRecord> comm_links;
  std::vector<ParallelGroup> parallel_groups;
  std::vector<std::string> sources;         // every file read
  std::vector<std::string> producer_metrics;  // raw JSON objects from our traces' metadata
  std::vector<std::string> notes;           // assumptions made while reading, for the report
  int64_t dropped_events = 0;  // events dropped for a duration out of bounds (named in notes)
  bool global_clock = false;  // all ranks share one clock (our simulator); else align per pair
  int chrome_files = 0;       // how many Chrome traces went into global_clock
  RankTimeline& rank(Rank r, const std::string& source);  // finds or adds
};

}  // namespace ppstream::analyze
