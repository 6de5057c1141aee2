// Reads one Chrome trace (ours, Kineto or Ascend trace_view) into the timeline model: one scan,
// each event mapped by the first format map that claims it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <map>

#include "chrome_events.h"
#include "chrome_reader.h"
#include "json_input.h"
#include "mappers.h"

namespace ppstream::analyze::detail {
namespace {

// Our traces' own metrics object (the producer's figures, which the report echoes): every number
// in it is finite, each `*ratio*` lies in [0, 1] and each `*_ms` is >= 0, as the simulator writes
// them. Anything else is a damaged file, reported with the key, never passed on as a figure.
void check_producer_metrics(const std::string& path, const nlohmann::json& j, const std::string& at,
                            const std::string& key) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) check_producer_metrics(path, v, at + "." + k, k);
  } else if (j.is_array()) {
    for (size_t n = 0; n < j.size(); ++n) check_producer_metrics(path, j[n], fmt::format("{}[{}]", at, n), key);
  } else if (j.is_number()) {
    const double x = j.get<double>();
    const char* expected = !std::isfinite(x)                                         ? "a finite number"
                           : key.find("ratio") != std::string::npos && (x < 0 || x > 1) ? "a ratio in [0, 1]"
                           : key.ends_with("_ms") && x < 0                             ? "a time >= 0 ms"
                                                                                       : nullptr;
    if (expected) throw TraceError(fmt::format("{}: {} is {}; expected {}", path, at, j.dump(), expected));
  }
}

// Slices waiting for their launch's timestamp (Kineto correlation), by index in the timeline.
using PendingLaunches = std::vector<std::pair<size_t, int64_t>>;

void add(RankTimeline& tl, StringTable& strings, const RawEvent& ev, const Draft& d, PendingLaunches* launches) {
  int64_t start = ev.ts_ns.value_or(0);
  int64_t dur = ev.dur_ns.value_or(0);
  if (d.step) {
    tl.steps.push_back(StepMarker{*d.step, start, start + dur});
    return;
  }
  Slice s;
  s.start_ns = start;
  s.dur_ns = dur;
  s.stream = tl.stream_index(d.stream_name, d.stream_id);
  s.kind = d.kind;
  s.op = d.op;
  s.name = strings.intern(ev.name);
  s.group = strings.intern(d.group);
  s.event = strings.intern(d.event);
  s.bytes = d.bytes;
  s.p2p = d.p2p;
  if (d.wait_on_stream) {
    // The recorded stream may have no slice of its own in the trace: it is added, empty.
    tl.wait_sources.push_back(WaitSource{tl.stream_index(kineto_stream_name(*d.wait_on_stream), *d.wait_on_stream),
                                         d.wait_record_corr, std::nullopt});
    s.wait_source = static_cast<uint32_t>(tl.wait_sources.size() - 1);
  }
  tl.slices.push_back(std::move(s));
  if (launches && d.correlation) launches->emplace_back(tl.slices.size() - 1, *d.correlation);
}

// One device of a Kineto trace: its lanes are keyed by (device, stream), never by stream alone.
struct KinetoDevice {
  RankTimeline tl;
  PendingLaunches pending;
  int64_t uncorrelated = 0;  // device slices with correlation 0 or negative
};

// Checked time bounds (timeline.h): a timestamp beyond them is an error; a duration beyond them
// (negative, or longer than 7 days: a corrupt record) drops the event with a named warning.
bool within_bounds(const std::string& path, const RawEvent& ev, TraceSet& set) {
  if (*ev.ts_ns > kMaxAbsTsNs || *ev.ts_ns < -kMaxAbsTsNs) {
    throw TraceError(fmt::format("{}: byte {}: event #{} '{}': \"ts\" {:.3f} µs is beyond ±{:.0e} µs; expected a "
                                 "profiler timestamp",
                                 path, ev.offset, ev.index, ev.name, static_cast<double>(*ev.ts_ns) / 1e3,
                                 static_cast<double>(kMaxAbsTsNs) / 1e3));
  }
  const int64_t dur = ev.dur_ns.value_or(0);
  if (dur >= 0 && dur <= kMaxDurNs) return true;
  if (set.dropped_events < kNamedDroppedEvents) {
    set.notes.push_back(fmt::format("{}: byte {}: event #{} '{}': \"dur\" {:.3f} µs is {}; event dropped", path,
                                    ev.offset, ev.index, ev.name, static_cast<double>(dur) / 1e3,
                                    dur < 0 ? "negative" : "longer than the 7-day bound"));
  }
  ++set.dropped_events;
  return false;
}

void finish(RankTimeline& tl) {
  // Stable: equal timestamps on a stream keep file order (a writer emits program order; zero-cost
  // P2P batches share a timestamp and FIFO matching depends on their order).
  std::stable_sort(tl.slices.begin(), tl.slices.end(), [](const Slice& a, const Slice& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.stream < b.stream;
  });
  std::sort(tl.steps.begin(), tl.steps.end(),
            [](const StepMarker& a, const StepMarker& b) { return a.start_ns < b.start_ns; });
  assign_steps(tl);
}

// Kineto: each device slice with a correlation takes its launch's ts (or is marked unseen), and
// each wait naming its cudaEventRecord call takes that call's ts. `launches` holds (correlation,
// launch ts) in file order, sorted here; the first launch of a correlation counts.
void sort_launches(std::vector<std::pair<int64_t, int64_t>>& launches) {
  std::stable_sort(launches.begin(), launches.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
}
std::optional<int64_t> launch_of(const std::vector<std::pair<int64_t, int64_t>>& launches, int64_t corr) {
  auto it = std::lower_bound(launches.begin(), launches.end(), corr,
                             [](const std::pair<int64_t, int64_t>& l, int64_t c) { return l.first < c; });
  if (it != launches.end() && it->first == corr) return it->second;
  return std::nullopt;
}
void resolve_launches(RankTimeline& tl, const PendingLaunches& pending, const std::vector<std::pair<int64_t, int64_t>>& launches) {
  for (auto [i, corr] : pending) {
    if (auto ts = launch_of(launches, corr)) tl.slices[i].launch_ns = *ts;
    else tl.slices[i].launch_unseen = true;
  }
  for (auto& w : tl.wait_sources) {
    if (w.record_corr) w.record_ns = launch_of(launches, *w.record_corr);
  }
}

Rank vendor_rank(const std::string& path, std::optional<int64_t> distributed_rank, const ChromeReadOptions& opts,
                 TraceSet& set) {
  if (opts.rank) return *opts.rank;
  if (distributed_rank) {
    if (*distributed_rank < 0 || *distributed_rank > std::numeric_limits<int32_t>::max())
      throw TraceError(fmt::format("{}: distributedInfo.rank {} is not a rank; expected 0..{}", path,
                                   *distributed_rank, std::numeric_limits<int32_t>::max()));
    return Rank(static_cast<int32_t>(*distributed_rank));
  }
  set.notes.push_back(fmt::format("{}: the trace names no rank (no distributedInfo.rank or "
                                  "profiler_info_<rank>.json); read as rank 0",
                                  path));
  return Rank(0);
}

bool has_device_slices(const RankTimeline& tl) {
  return std::any_of(tl.slices.begin(), tl.slices.end(),
                     [](const Slice& s) { return s.kind != SliceKind::HOST; });
}

}  // namespace

void add_rank(TraceSet& set, RankTimeline&& tl, const std::string& path) {
  for (auto& existing : set.ranks) {
    if (existing.rank == tl.rank) {
      throw TraceError(fmt::format("{}: rank {} is already loaded from {}; expected one trace per "
                                   "rank",
                                   path, tl.rank.v, existing.source));
    }
  }
  set.ranks.push_back(std::move(tl));
}

// The Kineto devices of one trace holding device slices, in device order, with the note on
// correlation 0 (docs/analyze.md "Steps": placed by time like uncorrelated device work).
std::vector<std::pair<int64_t, RankTimeline>> kineto_devices(const std::string& path, std::map<int64_t, KinetoDevice> kineto,
                                                             TraceSet& set) {
  std::vector<std::pair<int64_t, RankTimeline>> out;
  int64_t uncorrelated = 0;
  for (auto& [device, dev] : kineto) {
    uncorrelated += dev.uncorrelated;
    if (has_device_slices(dev.tl)) out.emplace_back(device, std::move(dev.tl));
  }
  if (uncorrelated > 0) {
    set.notes.push_back(fmt::format("{}: {} device slice(s) carry correlation id 0 or negative (no correlation in "
                                    "CUPTI and roctracer); placed in steps by start time like other uncorrelated "
                                    "device work",
                                    path, uncorrelated));
  }
  return out;
}

// A Kineto trace with kernels of several devices (a one-process pipeline): each device is a
// rank of its own (rank = device id) when the trace names no rank; a trace naming its rank
// cannot hold two ranks, so it is refused with the devices named.
void add_device_ranks(const std::string& path, std::vector<std::pair<int64_t, RankTimeline>> devices,
                      std::optional<int64_t> distributed_rank, std::optional<int64_t> base_ns,
                      const ChromeReadOptions& opts, TraceSet& set) {
  std::vector<int64_t> ids;
  for (const auto& d : devices) ids.push_back(d.first);
  if (opts.rank || distributed_rank) {
    throw TraceError(fmt::format("{}: device slices of {} devices ({}) in the trace of rank {}; expected one device "
                                 "per rank's trace (a trace naming no rank is read with each device as a rank)",
                                 path, ids.size(), fmt::join(ids, ", "),
                                 opts.rank ? int64_t{opts.rank->v} : *distributed_rank));
  }
  for (auto& [device, tl] : devices) {
    if (device < 0 || device > std::numeric_limits<int32_t>::max())
      throw TraceError(fmt::format("{}: device {} is not a device id; expected 0..{}", path, device,
                                   std::numeric_limits<int32_t>::max()));
    tl.rank = Rank(static_cast<int32_t>(device));
    tl.source = path;
    tl.base_ns = base_ns;
    finish(tl);
    add_rank(set, std::move(tl), path);
  }
  set.notes.push_back(fmt::format("{}: the trace names no rank and holds device slices of devices {}; each device "
                                  "is read as the rank of its id",
                                  path, fmt::join(ids, ", ")));
}

// What every format asks of the scan, merged once (a key or category named twice is kept once).
const ScanSpec& chrome_scan_spec() {
  static const ScanSpec spec = [] {
    ScanSpec s;
    add_ppstream_scan(s);
    add_kineto_scan(s);
    add_ascend_scan(s);
    add_megatron_scan(s);
    for (auto* list : {&s.host_categories, &s.kept_prefixes, &s.link_categories, &s.top_keys}) {
      std::sort(list->begin(), list->end());
      list->erase(std::unique(list->begin(), list->end()), list->end());
    }
    s.index_args();
    return s;
  }();
  return spec;
}

const ScanSpec& timer_scan_spec(bool flat_events) {
  static const auto make = [](bool flat) {
    ScanSpec s = chrome_scan_spec();
    s.flat_events = flat;
    s.every_phase = true;  // a timer op with the wrong "ph" is refused, not skipped (read_megatron.cpp)
    return s;
  };
  static const ScanSpec flat = make(true), full = make(false);
  return flat_events ? flat : full;
}

void read_chrome_file(const std::string& path, TraceSet& set, const ChromeReadOptions& opts) {
  PPStreamMeta meta;
  KinetoTop top;  // Kineto distributedInfo.rank, baseTimeNanoseconds
  std::map<int64_t, RankTimeline> ours;  // pid (= rank) → timeline
  RankTimeline vendor;                   // Ascend: one rank per file
  std::map<int64_t, KinetoDevice> kineto;  // Kineto: device → its lanes
  std::vector<StepMarker> host_steps;      // Kineto ProfilerStep# markers: the host's, every device's
  LaneNames lanes;                       // process / thread names (also ours: thread_name)
  std::vector<LaneEvent> lane_events;    // Ascend / MindSpore lanes, mapped once names are known
  std::vector<TimerOp> timer_ops;        // Megatron timers, mapped once the lane names are known
  std::vector<std::pair<int64_t, int64_t>> launch_ts;  // (correlation, launch ts), Kineto: 16 bytes each
  size_t seen = 0;
  const auto on_top = [&](const TopValue& v) {
    read_ppstream_top(path, v, meta);
    read_kineto_top(path, v, top);
  };
  // A Megatron timer op (args.step / args.seq_id, not one of ours with args.kind) that is
  // malformed is refused as the what-if refuses it (docs/analyze.md "Megatron"), not left out.
  const auto timer_claim = [&](const RawEvent& ev) {
    return arg(ev, StrArg::KIND).empty() && claims_timer_op(path, ev, false);
  };
  scan_chrome(path, chrome_scan_spec(), [&](const RawEvent& ev) {
    if (ev.ph != 'X' && ev.ph != 'M') {  // only an event claiming to be a timer op (ScanSpec::claim_keys)
      timer_claim(ev);  // throws for one that is no one of ours
      return;
    }
    ++seen;
    if (ev.ph == 'M') {
      if (ev.pid && ev.tid && !ev.args.meta_name.empty() && ev.name == "thread_name") {
        lanes.thread[{*ev.pid, *ev.tid}] = std::string(ev.args.meta_name);
      } else if (ev.pid && !ev.args.meta_name.empty() && ev.name == "process_name") {
        lanes.process[*ev.pid] = std::string(ev.args.meta_name);
      }
      return;
    }
    if (!ev.ts_ns) {
      throw TraceError(fmt::format("{}: byte {}: event #{} '{}': complete event without \"ts\"",
                                   path, ev.offset, ev.index, ev.name));
    }
    if (!within_bounds(path, ev, set)) return;
    if (const auto corr = kineto_launch(ev)) {
      launch_ts.emplace_back(*corr, *ev.ts_ns);
    } else if (auto d = map_ppstream(path, ev)) {
      add(ours[*ev.pid], set.strings, ev, *d, nullptr);
    } else if (auto k = map_kineto(ev); k && k->step) {
      host_steps.push_back(StepMarker{*k->step, *ev.ts_ns, *ev.ts_ns + ev.dur_ns.value_or(0)});
    } else if (k) {
      KinetoDevice& dev = kineto[k->device.value_or(0)];
      dev.uncorrelated += k->no_correlation ? 1 : 0;
      add(dev.tl, set.strings, ev, *k, &dev.pending);
    } else if (timer_claim(ev)) {
      if (auto timer = megatron_event_at(path, ev, set.strings)) timer_ops.push_back(*timer);
    } else if (auto lane = ascend_lane_event(ev, set.strings)) {
      lane_events.push_back(*lane);
    }
  }, on_top);
  sort_launches(launch_ts);
  for (auto& [device, dev] : kineto) {
    resolve_launches(dev.tl, dev.pending, launch_ts);
    dev.tl.steps.insert(dev.tl.steps.end(), host_steps.begin(), host_steps.end());
  }
  if (!lane_events.empty()) {
    const Rank r = opts.rank ? *opts.rank : Rank(static_cast<int32_t>(top.rank.value_or(0)));
    map_ascend_lanes(lane_events, lanes, r, set.strings, vendor);
  }
  vendor.steps.insert(vendor.steps.end(), host_steps.begin(), host_steps.end());  // torch_npu: ProfilerStep# too

  const std::optional<int64_t>& distributed_rank = top.rank;
  std::vector<RankTimeline> workers;  // Megatron timers: one timeline per (DP rank, PP rank)
  if (!timer_ops.empty()) map_megatron_workers(path, std::move(timer_ops), lanes, set.strings, workers);

  set.sources.push_back(path);
  std::vector<std::pair<int64_t, RankTimeline>> devices = kineto_devices(path, std::move(kineto), set);
  if (devices.size() == 1 && !has_device_slices(vendor)) {
    vendor = std::move(devices.front().second);
    devices.clear();
  }
  bool global = meta.present && meta.clock == "global" && !ours.empty() && !has_device_slices(vendor) && devices.empty();
  // Megatron timer timelines (and nothing else in the file) are on one clock: the artifact's
  // timelines put every worker on it, and the what-if reads them so (docs/whatif.md "Input").
  if (!workers.empty() && ours.empty() && devices.empty() && !has_device_slices(vendor)) global = true;
  set.global_clock = set.chrome_files == 0 ? global : (set.global_clock && global);
  ++set.chrome_files;
  if (!meta.metrics_json.empty()) {
    // A malformed object (the report leaves it out) is not checked; numbers beyond a double
    // (1e999) make it malformed for nlohmann too.
    const auto metrics = nlohmann::json::parse(meta.metrics_json, nullptr, false);
    if (!metrics.is_discarded()) check_producer_metrics(path, metrics, "otherData.ppstream.metrics", "");
    set.producer_metrics.push_back(meta.metrics_json);
  }

  for (auto& [pid, tl] : ours) {
    tl.rank = Rank(static_cast<int32_t>(pid));
    tl.source = path;
    for (auto& s : tl.streams) {
      auto it = lanes.thread.find({pid, s.id});
      if (it != lanes.thread.end()) s.name = it->second;
    }
    for (auto [r, pp] : meta.pp_ranks) {
      if (r == pid) tl.pp_rank = pp;
    }
    finish(tl);
    add_rank(set, std::move(tl), path);
  }
  if (!devices.empty()) {
    add_device_ranks(path, std::move(devices), distributed_rank, top.base_ns, opts, set);
  } else if (has_device_slices(vendor)) {
    vendor.rank = vendor_rank(path, distributed_rank, opts, set);
    vendor.source = path;
    vendor.base_ns = top.base_ns;
    finish(vendor);
    add_rank(set, std::move(vendor), path);
  } else if (ours.empty() && workers.empty()) {
    throw TraceError(fmt::format("{}: no device lanes: {} events but none is a device-stream slice "
                                 "(expected Kineto kernels with args.stream, Ascend Hardware tasks "
                                 "with args \"Stream Id\", ppstream slices with args.kind or Megatron "
                                 "timer ops with args.step and args.seq_id)",
                                 path, seen));
  }
  for (auto& tl : workers) add_rank(set, std::move(tl), path);
  std::sort(set.ranks.begin(), set.ranks.end(),
            [](const RankTimeline& a, const RankTimeline& b) { return a.rank < b.rank; });
}

std::optional<TimerOp> megatron_event_at(const std::string& path, const RawEvent& ev, StringTable& strings) {
  try {
    return megatron_event(ev, strings);
  } catch (const TraceError& e) {
    throw TraceError(fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace ppstream::analyze::detail
