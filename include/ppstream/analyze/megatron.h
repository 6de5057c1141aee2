// Megatron-LM timer traces: the timeline format of the straggler what-if artifact (ByteDance Seed,
// "Understanding Stragglers in Large Model Training Using What-if Analysis", OSDI 2025). Chrome
// JSON (plain or .gz): pid = DP rank; one thread per lane, named by a thread_name metadata event
// "PP rank p, TP rank t, compute|pp-comm|tp-comm|dp-comm"; each "X" slice is one Megatron timer
// op (forward-compute, backward-send, grads-reduce-scatter, …) with args step, model_chunk,
// mb_id, seq_id (-1 where the producer has none); ts/dur in µs. docs/whatif.md "Input".
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze {

enum class TimerLane : uint8_t { COMPUTE, PP_COMM, TP_COMM, DP_COMM };
const char* to_string(TimerLane l);  // "compute", "pp-comm", "tp-comm", "dp-comm"

struct TimerLaneName {
  int32_t pp_rank = 0, tp_rank = 0;
  TimerLane lane = TimerLane::COMPUTE;
};
// "PP rank 3, TP rank 0, dp-comm" → {3, 0, DP_COMM}; nullopt for any other text.
std::optional<TimerLaneName> parse_timer_lane(std::string_view thread_name);

// One timer op. While a file is read, pid/tid are the event's; after the lane names are
// resolved dp_rank = pid and pp_rank/tp_rank/lane come from the thread name.
struct TimerOp {
  int64_t start_ns = 0, dur_ns = 0;
  int64_t offset = 0;  // byte offset of the event in the (decompressed) file, for errors
  int32_t step = 0;
  int32_t dp_rank = 0, pp_rank = 0, tp_rank = 0;
  int32_t chunk = -1, mb = -1, seq = 0;  // args model_chunk, mb_id (-1: not given), seq_id
  int32_t tid = 0;
  uint32_t name = 0;  // interned timer name
  TimerLane lane = TimerLane::COMPUTE;
};

// Every timer op of one or more files (one file per job, or one per DP rank).
struct TimerTrace {
  StringTable strings;
  std::deque<TimerOp> ops;  // a deque: growing it never holds two copies (millions of ops)
  std::vector<std::string> sources;
  std::vector<std::string> notes;  // e.g. complete events that are no timer op, per file
  // (DP rank = pid, PP rank) of every thread_name metadata event naming a timer lane, with the
  // file that declared it: a worker declared here with no op is a hole the what-if refuses.
  std::map<std::pair<int32_t, int32_t>, std::string> declared_workers;
};

// Reads the timer ops of `path` into `out`. Throws TraceError naming the file, byte offset and
// event for malformed input, a slice whose thread has no "PP rank p, TP rank t, lane" name, a
// step or seq_id out of int32, and a file with no timer op at all.
void read_timer_trace(const std::string& path, TimerTrace& out);
// The same with `flat_events` false: every event through the full (simdjson) parse instead of
// the flat-event reader (docs/whatif.md "Benchmark"); the same result by contract — the oracle of
// tests and of the chrome_json fuzz target.
void read_timer_trace(const std::string& path, TimerTrace& out, bool flat_events);

}  // namespace ppstream::analyze
