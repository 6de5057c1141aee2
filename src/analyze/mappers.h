// Per-format field maps from a raw Chrome event to a slice draft. Vendor naming rules (NCCL
// kernel names, Ascend task types, hcom_ ops) live only in the mapper of their format.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chrome_events.h"
#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze::detail {

struct Draft {
  SliceKind kind = SliceKind::COMPUTE;
  int64_t stream_id = 0;
  std::string stream_name;  // default name; thread_name metadata may replace it
  std::string group;
  std::string_view event;
  uint64_t bytes = 0;
  std::vector<P2PPart> p2p;
  std::optional<int64_t> step;  // set: a step marker, not a slice
  std::optional<int64_t> correlation;  // Kineto device work: its launch's correlation id
};

// Ours: events whose args carry "kind". Throws TraceError on an unknown kind.
std::optional<Draft> map_ppstream(const std::string& path, const RawEvent& ev);
// PyTorch Kineto device events: kernels, memcpy/memset, cuda_sync with a stream.
std::optional<Draft> map_kineto(const RawEvent& ev);
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
// Bytes of `count` elements of an Ascend data_type ("FP32", "BF16", "INT8", …); 0 when unknown.
uint64_t ascend_bytes(std::optional<int64_t> count, std::string_view data_type);
// True when a scanned event may belong to an Ascend / MindSpore lane (kept as a LaneEvent).
bool lane_candidate(const RawEvent& ev);
// Maps one trace's lane events into `tl` by the Ascend lane model (docs/analyze.md): hardware
// tasks by task type, HCCL "Group N Communication" ops as communication (their hardware tasks on
// the HCCL stream named after the op that encloses them), "Plane N" tasks' src/dst rank as the
// peers of P2P ops of `rank`, MindSpore "CPU OP" slices as compute or communication by name.
void map_ascend_lanes(const std::vector<LaneEvent>& evs, const LaneNames& names, Rank rank,
                      StringTable& strings, RankTimeline& tl);
// "ProfilerStep#551" (Kineto, torch_npu) → 551.
std::optional<int64_t> profiler_step(std::string_view name);

}  // namespace ppstream::analyze::detail
