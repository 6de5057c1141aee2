// Per-format field maps from a raw Chrome event to a slice draft. Vendor naming rules (NCCL
// kernel names, Ascend task types, hcom_ ops) and the args keys, host categories and top-level
// values each format needs from the scan (ScanSpec) live only in the mapper of their format.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chrome_events.h"
#include "ppstream/analyze/megatron.h"
#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze::detail {

// The RawArgs slots the mappers fill; which key fills which slot is in each format's map_*.cpp.
enum class StrArg : uint8_t {
  KIND, GROUP, EVENT,                     // ours
  COLLECTIVE, PG_NAME, PG_DESC, DTYPE,    // Kineto NCCL kernels
  TASK_TYPE, OP_TYPE, DATA_TYPE,          // Ascend hardware tasks, MindSpore CPU ops, HCCL ops
  COUNT_
};
enum class IntArg : uint8_t {
  BYTES, STEP,                                           // ours
  STREAM, IN_NELEMS, CORRELATION,                        // Kineto
  STREAM_ID, COUNT,                                      // Ascend
  SRC_RANK, DST_RANK,                                    // Kineto "Src Rank", Ascend Plane "src rank"
  DEVICE, WAIT_ON_STREAM, WAIT_RECORD_CORR,              // Kineto device, Stream Wait Event's source
  MODEL_CHUNK, MB_ID, SEQ_ID,                            // Megatron timers (with STEP)
  COUNT_
};
static_assert(static_cast<size_t>(StrArg::COUNT_) <= kArgSlots && static_cast<size_t>(IntArg::COUNT_) <= kArgSlots);
constexpr ArgKey arg_key(std::string_view key, StrArg slot) { return {key, ArgKey::STRING, static_cast<uint8_t>(slot)}; }
constexpr ArgKey arg_key(std::string_view key, IntArg slot) { return {key, ArgKey::INT, static_cast<uint8_t>(slot)}; }
inline std::string_view arg(const RawEvent& ev, StrArg a) { return ev.args.str[static_cast<size_t>(a)]; }
inline std::optional<int64_t> arg(const RawEvent& ev, IntArg a) { return ev.args.num[static_cast<size_t>(a)]; }

// Each format adds what it needs from the scan; the reader scans with the union of all three.
void add_ppstream_scan(ScanSpec& spec);
void add_kineto_scan(ScanSpec& spec);
void add_ascend_scan(ScanSpec& spec);
void add_megatron_scan(ScanSpec& spec);

// Our traces' otherData.ppstream (or metadata.ppstream) object (trace_format.h).
struct PPStreamMeta {
  bool present = false;
  int64_t version = 0;
  std::string producer, clock, metrics_json;
  std::vector<std::pair<int64_t, int32_t>> pp_ranks;  // rank → pp_rank
};
// Reads `meta` from a top-level value; values that are not ours are ignored. Throws TraceError.
void read_ppstream_top(const std::string& path, const TopValue& value, PPStreamMeta& meta);
// Kineto's top-level values: distributedInfo.rank and baseTimeNanoseconds (kineto PR #928: the
// epoch time of ts 0, in [0, kMaxAbsTsNs]); other values are ignored. Throws TraceError.
struct KinetoTop {
  std::optional<int64_t> rank, base_ns;
};
void read_kineto_top(const std::string& path, const TopValue& value, KinetoTop& top);

struct Draft {
  SliceKind kind = SliceKind::COMPUTE;
  CollectiveOp op = CollectiveOp::OTHER;  // communication: what it does (timeline.h)
  int64_t stream_id = 0;
  std::string stream_name;  // default name; thread_name metadata may replace it
  std::string group;
  std::string_view event;
  uint64_t bytes = 0;
  std::vector<P2PPart> p2p;
  std::optional<int64_t> step;  // set: a step marker, not a slice
  std::optional<int64_t> correlation;  // Kineto device work: its launch's correlation id (> 0)
  bool no_correlation = false;  // Kineto device work with correlation 0 or negative: "none" (CUPTI, roctracer)
  std::optional<int64_t> device;  // Kineto device work: args.device, else the event's pid (Kineto: pid = device)
  // Kineto "Stream Wait Event": the stream the awaited event was recorded on (wait_on_stream >= 0)
  // and the cudaEventRecord call's correlation (wait_on_cuda_event_record_corr_id > 0).
  std::optional<int64_t> wait_on_stream, wait_record_corr;
};

// Ours: events whose args carry "kind". Throws TraceError on an unknown kind.
std::optional<Draft> map_ppstream(const std::string& path, const RawEvent& ev);
// "stream N": the name of Kineto stream N (and of the stream a wait names by wait_on_stream).
std::string kineto_stream_name(int64_t stream);
// PyTorch Kineto device events: kernels, memcpy/memset, cuda_sync with a stream.
std::optional<Draft> map_kineto(const RawEvent& ev);
// A Kineto kernel launch (cuda_runtime / cuda_driver): its correlation id, which the device
// slice it launched carries too.
std::optional<int64_t> kineto_launch(const RawEvent& ev);
// An event no format claimed during the scan, kept until the process names are known:
// Ascend trace_view and MindSpore lay their lanes out by process ("Ascend Hardware", "HCCL",
// "CPU OP"), and the metadata naming the processes may come after the events.
struct LaneEvent {
  size_t index = 0, offset = 0;  // event index and byte offset, for errors and warnings
  int64_t pid = 0, tid = 0;
  int64_t ts_ns = 0, dur_ns = 0;
  uint32_t name = 0;       // interned
  uint32_t task_type = 0;  // interned args["Task Type"]
  bool cpu_op = false;     // args["type"] == "HostCpuOps" (MindSpore CPU ops; scope ranges lack it)
  uint64_t bytes = 0;      // HCCL ops: args count × size of args data_type
  std::optional<int64_t> stream_id, src_rank, dst_rank;
};
struct LaneNames {
  std::map<int64_t, std::string> process;                      // pid → process_name
  std::map<std::pair<int64_t, int64_t>, std::string> thread;   // (pid, tid) → thread_name
};
// A scanned event that may belong to an Ascend / MindSpore lane, kept as a LaneEvent; else absent.
std::optional<LaneEvent> ascend_lane_event(const RawEvent& ev, StringTable& strings);
// Maps one trace's lane events into `tl` by the Ascend lane model (docs/analyze.md): hardware
// tasks by task type, HCCL "Group N Communication" ops as communication (their hardware tasks on
// the HCCL stream named after the op that encloses them), "Plane N" tasks' src/dst rank as the
// peers of P2P ops of `rank`, MindSpore "CPU OP" slices as compute or communication by name.
void map_ascend_lanes(const std::vector<LaneEvent>& evs, const LaneNames& names, Rank rank,
                      StringTable& strings, RankTimeline& tl);
// Megatron-LM timer traces (the what-if artifact's timeline format, megatron.h): an "X" event
// carrying integer args.step and args.seq_id, no args.kind. Absent for every other event.
std::optional<TimerOp> megatron_event(const RawEvent& ev, StringTable& strings);
// What marks an event as a Megatron timer op (docs/whatif.md "Input"): args.step or args.seq_id
// given (whatever its value), or (with `by_name`: the what-if's reader) an "X" event named as a
// timer. Such an event must be an "X" event with both as integers; throws TraceError naming the
// file, byte, event and what is wrong. False for an event that makes no such claim (metadata,
// other slices). whatif's reader and analyze's (docs/analyze.md) both refuse through it.
bool claims_timer_op(const std::string& path, const RawEvent& ev, bool by_name);
// Maps one file's timer events into one RankTimeline per worker (rank = pp_rank · dp + dp_rank,
// streams = the lanes, step markers = each step's span on the worker). Throws TraceError naming
// the file and the lane when a thread_name is missing or not "PP rank p, TP rank t, <lane>".
// Fills dp_rank/pp_rank/tp_rank/lane of a timer op from the lane names; throws TraceError naming
// the file, byte and thread when its thread has no timer-lane name.
class TimerLaneResolver {
 public:
  TimerLaneResolver(const std::string& path, const LaneNames& names);
  void operator()(TimerOp& op);

 private:
  const std::string& path_;
  const LaneNames& names_;
  std::map<std::pair<int64_t, int64_t>, TimerLaneName> lanes_;
  std::map<std::pair<int64_t, int64_t>, TimerLaneName>::const_iterator last_;
};
void map_megatron_workers(const std::string& path, std::vector<TimerOp> ops, const LaneNames& names,
                          StringTable& strings, std::vector<RankTimeline>& out);
// "ProfilerStep#551" (Kineto, torch_npu) → 551.
std::optional<int64_t> profiler_step(std::string_view name);

}  // namespace ppstream::analyze::detail
