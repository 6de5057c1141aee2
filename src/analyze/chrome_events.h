// The one streaming scanner of Chrome trace JSON (chunked reading, simdjson on-demand per event): hands each event, with
// the few args any reader uses, to per-format mappers. Views are valid during the callback.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze::detail {

// The args keys any mapper reads; everything else is skipped unparsed.
struct RawArgs {
  std::string_view kind, group, event, instr;                  // ours
  std::string_view collective, pg_name, pg_desc, dtype;        // Kineto NCCL kernels
  std::string_view task_type;                                  // Ascend hardware tasks
  std::string_view op_type;                                    // MindSpore CPU OP: "HostCpuOps"
  std::string_view data_type;                                  // Ascend HCCL ops: "FP32", …
  std::optional<int64_t> count;                                // Ascend HCCL ops: elements
  std::string_view meta_name;                                  // "M" events: args.name
  std::optional<int64_t> stream, stream_id, bytes, in_nelems, step, src_rank, dst_rank;
  std::optional<int64_t> correlation;  // Kineto: links a kernel to its cuda_runtime launch
};

struct RawEvent {
  size_t index = 0;     // position in traceEvents
  size_t offset = 0;    // byte offset of the event in the (decompressed) file
  char ph = 0;
  std::string_view name, cat;
  std::optional<int64_t> pid, tid;
  std::optional<int64_t> ts_ns, dur_ns;
  RawArgs args;
};

// Top-level facts of the document (may appear before or after traceEvents).
struct ChromeTop {
  bool bare_array = false;
  std::optional<int64_t> distributed_rank;  // Kineto distributedInfo.rank
  bool ppstream = false;                    // otherData/metadata.ppstream present
  int64_t version = 0;
  std::string producer, clock, metrics_json;
  std::vector<std::pair<int64_t, int32_t>> pp_ranks;  // rank → pp_rank
};

// Scans every event of the file at `path` (plain or gzip), reading it in bounded chunks and
// parsing one event at a time (docs/analyze.md "Memory"); host-side events (cpu_op, python_function, flows…) are dropped
// before their args are parsed, except ProfilerStep markers and cuda_runtime/cuda_driver
// launches (only args.correlation is read: device work is put in the step that launched it). Throws TraceError with file, event index and byte offset.
void scan_chrome(const std::string& path, ChromeTop& top, const std::function<void(const RawEvent&)>& sink);

}  // namespace ppstream::analyze::detail
