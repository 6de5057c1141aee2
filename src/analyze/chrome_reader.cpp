// Reads one Chrome trace (ours, Kineto or Ascend trace_view) into the timeline model: one scan,
// each event mapped by the first format map that claims it.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "chrome_events.h"
#include "chrome_reader.h"
#include "json_input.h"
#include "mappers.h"

namespace ppstream::analyze::detail {
namespace {

void add(RankTimeline& tl, StringTable& strings, const RawEvent& ev, const Draft& d) {
  int64_t start = ev.ts_ns.value_or(0);
  int64_t dur = std::max<int64_t>(ev.dur_ns.value_or(0), 0);
  if (d.step) {
    tl.steps.push_back(StepMarker{*d.step, start, start + dur});
    return;
  }
  Slice s;
  s.start_ns = start;
  s.dur_ns = dur;
  s.stream = tl.stream_index(d.stream_name, d.stream_id);
  s.kind = d.kind;
  s.name = strings.intern(ev.name);
  s.group = strings.intern(d.group);
  s.event = strings.intern(d.event);
  s.bytes = d.bytes;
  s.p2p = d.p2p;
  tl.slices.push_back(std::move(s));
}

void finish(RankTimeline& tl) {
  // Stable: equal timestamps on a stream keep file order (a writer emits program order; zero-cost
  // P2P batches share a timestamp and FIFO matching depends on their order).
  std::stable_sort(tl.slices.begin(), tl.slices.end(), [](const Slice& a, const Slice& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.stream < b.stream;
  });
  std::sort(tl.steps.begin(), tl.steps.end(),
            [](const StepMarker& a, const StepMarker& b) { return a.start_ns < b.start_ns; });
}

bool has_device_slices(const RankTimeline& tl) {
  return std::any_of(tl.slices.begin(), tl.slices.end(),
                     [](const Slice& s) { return s.kind != SliceKind::HOST; });
}

void merge_into(TraceSet& set, RankTimeline&& tl, const std::string& path) {
  for (auto& existing : set.ranks) {
    if (existing.rank == tl.rank) {
      throw TraceError(fmt::format("{}: rank {} is already loaded from {}; expected one trace per "
                                   "rank",
                                   path, tl.rank.v, existing.source));
    }
  }
  set.ranks.push_back(std::move(tl));
}

}  // namespace

void read_chrome_buffer(const std::string& path, const simdjson::padded_string& buf, TraceSet& set,
                        const ChromeReadOptions& opts) {
  ChromeTop top;
  std::map<int64_t, RankTimeline> ours;  // pid (= rank) → timeline
  RankTimeline vendor;                   // Kineto / Ascend: one rank per file
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  size_t seen = 0;
  scan_chrome(path, buf, top, [&](const RawEvent& ev) {
    ++seen;
    if (ev.ph == 'M') {
      if (ev.name == "thread_name" && ev.pid && ev.tid && !ev.args.meta_name.empty()) {
        thread_names[{*ev.pid, *ev.tid}] = std::string(ev.args.meta_name);
      }
      return;
    }
    if (!ev.ts_ns) {
      throw TraceError(fmt::format("{}: byte {}: event #{} '{}': complete event without \"ts\"",
                                   path, ev.offset, ev.index, ev.name));
    }
    if (auto d = map_ppstream(path, ev)) {
      add(ours[*ev.pid], set.strings, ev, *d);
    } else if (auto k = map_kineto(ev)) {
      add(vendor, set.strings, ev, *k);
    } else if (auto a = map_ascend(ev)) {
      add(vendor, set.strings, ev, *a);
    }
  });

  set.sources.push_back(path);
  bool global = top.ppstream && top.clock == "global" && !ours.empty() && !has_device_slices(vendor);
  set.global_clock = set.chrome_files == 0 ? global : (set.global_clock && global);
  ++set.chrome_files;
  if (!top.metrics_json.empty()) set.producer_metrics.push_back(top.metrics_json);

  for (auto& [pid, tl] : ours) {
    tl.rank = Rank(static_cast<int32_t>(pid));
    tl.source = path;
    for (auto& s : tl.streams) {
      auto it = thread_names.find({pid, s.id});
      if (it != thread_names.end()) s.name = it->second;
    }
    for (auto [r, pp] : top.pp_ranks) {
      if (r == pid) tl.pp_rank = pp;
    }
    finish(tl);
    merge_into(set, std::move(tl), path);
  }
  if (has_device_slices(vendor)) {
    if (opts.rank) {
      vendor.rank = *opts.rank;
    } else if (top.distributed_rank) {
      if (*top.distributed_rank < 0 || *top.distributed_rank > std::numeric_limits<int32_t>::max())
        throw TraceError(fmt::format("{}: distributedInfo.rank {} is not a rank; expected 0..{}", path,
                                     *top.distributed_rank, std::numeric_limits<int32_t>::max()));
      vendor.rank = Rank(static_cast<int32_t>(*top.distributed_rank));
    } else {
      vendor.rank = Rank(0);
      set.notes.push_back(fmt::format("{}: the trace names no rank (no distributedInfo.rank or "
                                      "profiler_info_<rank>.json); read as rank 0",
                                      path));
    }
    vendor.source = path;
    finish(vendor);
    merge_into(set, std::move(vendor), path);
  } else if (ours.empty()) {
    throw TraceError(fmt::format("{}: no device lanes: {} events but none is a device-stream slice "
                                 "(expected Kineto kernels with args.stream, Ascend Hardware tasks "
                                 "with args \"Stream Id\", or ppstream slices with args.kind)",
                                 path, seen));
  }
  std::sort(set.ranks.begin(), set.ranks.end(),
            [](const RankTimeline& a, const RankTimeline& b) { return a.rank < b.rank; });
}

}  // namespace ppstream::analyze::detail
