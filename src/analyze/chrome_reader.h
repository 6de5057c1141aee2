// Reading one Chrome trace file (any of our three Chrome-based formats) into a TraceSet.
#pragma once

#include <optional>
#include <string>

#include "chrome_events.h"
#include "ppstream/analyze/megatron.h"
#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze::detail {

struct ChromeReadOptions {
  std::optional<Rank> rank;  // Ascend directories: the rank from profiler_info_<rank>.json
};

// Throws TraceError on malformed input, duplicate ranks and traces with no device lanes.
// The file (plain or gzip) is read in chunks, one event at a time (chrome_events.h).
void read_chrome_file(const std::string& path, TraceSet& set, const ChromeReadOptions& opts);

// Events dropped for an out-of-bounds duration are named in a note each, the first this many of
// a set (then counted).
inline constexpr int64_t kNamedDroppedEvents = 5;

// Adds one rank's finished timeline to `set`; throws TraceError naming `path` and the file the
// rank was loaded from when `set` already has it.
void add_rank(TraceSet& set, RankTimeline&& tl, const std::string& path);

// The union of every format's ScanSpec (mappers.h), built once.
const ScanSpec& chrome_scan_spec();
// chrome_scan_spec with every_phase on, and flat_events as asked: what read_timer_trace scans
// Megatron timelines with (flat_events off: its full-parse oracle).
const ScanSpec& timer_scan_spec(bool flat_events = true);
// megatron_event (mappers.h) with the file named in its errors.
std::optional<TimerOp> megatron_event_at(const std::string& path, const RawEvent& ev, StringTable& strings);

}  // namespace ppstream::analyze::detail
