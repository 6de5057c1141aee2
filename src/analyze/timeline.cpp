// Small helpers of the timeline model: kind names, string interning, lookups.
#include "ppstream/analyze/timeline.h"

#include <algorithm>

namespace ppstream::analyze {

const char* to_string(SliceKind k) {
  switch (k) {
    case SliceKind::COMPUTE: return "compute";
    case SliceKind::COLLECTIVE: return "collective";
    case SliceKind::P2P: return "p2p";
    case SliceKind::STREAM_WAIT: return "stream_wait";
    case SliceKind::HOST: return "host";
    case SliceKind::MEMORY: return "memory";
  }
  return "?";
}

const char* to_string(WaitRule r) {
  switch (r) {
    case WaitRule::RECORD: return "record";
    case WaitRule::STREAM: return "stream";
    case WaitRule::TIMING: return "timing";
  }
  return "?";
}

std::optional<SliceKind> parse_slice_kind(std::string_view s) {
  for (SliceKind k : {SliceKind::COMPUTE, SliceKind::COLLECTIVE, SliceKind::P2P,
                      SliceKind::STREAM_WAIT, SliceKind::HOST, SliceKind::MEMORY}) {
    if (s == to_string(k)) return k;
  }
  return std::nullopt;
}

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::OTHER: return "other";
    case CollectiveOp::ALL_REDUCE: return "all-reduce";
    case CollectiveOp::REDUCE_SCATTER: return "reduce-scatter";
    case CollectiveOp::ALL_GATHER: return "all-gather";
    case CollectiveOp::BROADCAST: return "broadcast";
    case CollectiveOp::SEND: return "send";
    case CollectiveOp::RECV: return "recv";
    case CollectiveOp::REDUCE: return "reduce";
  }
  return "?";
}

StringTable::StringTable() { intern(""); }

uint32_t StringTable::intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  strings_.emplace_back(s);
  auto id = static_cast<uint32_t>(strings_.size() - 1);
  ids_.emplace(strings_.back(), id);
  return id;
}

uint32_t RankTimeline::stream_index(std::string_view name, int64_t id) {
  for (size_t i = 0; i < streams.size(); ++i) {
    if (streams[i].id == id) return static_cast<uint32_t>(i);
  }
  streams.push_back(StreamInfo{std::string(name), id});
  return static_cast<uint32_t>(streams.size() - 1);
}

std::optional<double> StepTraceRow::get(std::string_view column) const {
  for (const auto& [k, v] : values) {
    if (k == column) return v;
  }
  return std::nullopt;
}

RankTimeline& TraceSet::rank(Rank r, const std::string& source) {
  for (auto& t : ranks) {
    if (t.rank == r) return t;
  }
  ranks.push_back(RankTimeline{});
  ranks.back().rank = r;
  ranks.back().source = source;
  return ranks.back();
}

}  // namespace ppstream::analyze

namespace ppstream::analyze {

void assign_steps(RankTimeline& tl) {
  auto last_started = [&](int64_t t) -> std::optional<uint32_t> {
    auto it = std::upper_bound(tl.steps.begin(), tl.steps.end(), t,
                               [](int64_t v, const StepMarker& m) { return v < m.start_ns; });
    if (it == tl.steps.begin()) return std::nullopt;
    return static_cast<uint32_t>(it - tl.steps.begin() - 1);
  };
  for (auto& s : tl.slices) {
    s.step.reset();
    if (s.launch_unseen) continue;  // launched before profiling: in no step
    if (s.launch_ns) {              // launched inside a ProfilerStep range: that step
      auto i = last_started(*s.launch_ns);
      if (i && *s.launch_ns < tl.steps[*i].end_ns) s.step = i;
      continue;
    }
    s.step = last_started(s.start_ns);
  }
}

}  // namespace ppstream::analyze
