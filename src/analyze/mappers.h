// Per-format field maps from a raw Chrome event to a slice draft. Vendor naming rules (NCCL
// kernel names, Ascend task types, hcom_ ops) live only in the mapper of their format.
#pragma once

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
};

// Ours: events whose args carry "kind". Throws TraceError on an unknown kind.
std::optional<Draft> map_ppstream(const std::string& path, const RawEvent& ev);
// PyTorch Kineto device events: kernels, memcpy/memset, cuda_sync with a stream.
std::optional<Draft> map_kineto(const RawEvent& ev);
// Ascend trace_view "Ascend Hardware" tasks (args carry "Stream Id" / "Task Type").
std::optional<Draft> map_ascend(const RawEvent& ev);
// "ProfilerStep#551" (Kineto, torch_npu) → 551.
std::optional<int64_t> profiler_step(std::string_view name);

}  // namespace ppstream::analyze::detail
