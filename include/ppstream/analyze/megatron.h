// Megatron-LM timer traces: the timeline format of the straggler what-if artifact (ByteDance Seed,
// "Understanding Stragglers in Large Model Training Using What-if Analysis", OSDI 2025). Chrome
// JSON (plain or .gz): pid = DP rank; one thread per lane, named by a thread_name metadata event
// "PP rank p, TP rank t, compute|pp-comm|tp-comm|dp-comm"; each "X" slice is one Megatron timer
// op (forward-compute, backward-send, grads-reduce-scatter, …) with args step, model_chunk,
// mb_id, seq_id (-1 where the producer has none); ts/dur in µs. docs/whatif.md "Input".
#pragma once

#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze {

// The Megatron timers the what-if models (docs/whatif.md "Input"; whatif's OpType, in its order).
// An "X" event with one of these names is a timer op: it must give args.step and args.seq_id.
inline constexpr std::array<std::string_view, 14> kMegatronTimerNames = {
    "forward-compute",      "backward-compute",          "forward-send",
    "forward-recv",         "backward-send",             "backward-recv",
    "params-all-gather",    "grads-reduce-scatter",      "separate-grads-all-reduce",
    "layernorm-grads-all-reduce", "embedding-grads-all-reduce", "optimizer-clip-main-grad",
    "optimizer",            "gc"};

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

// One op as TimerOps stores it (48 bytes): the worker fields are an index into its lane table.
struct TimerOpRecord {
  int64_t start_ns = 0, dur_ns = 0, offset = 0;
  int32_t step = 0, chunk = -1, mb = -1, seq = 0;
  uint32_t name = 0, worker = 0;
};
static_assert(sizeof(TimerOpRecord) == 48);

// The timer ops of a trace, stored packed (docs/whatif.md "Benchmark", memory): 48 bytes an op
// instead of TimerOp's 64, the worker fields (dp_rank, tid, pp_rank, tp_rank, lane) interned in
// a table of the trace's lanes (a few thousand) and each op holding its entry's index. Read by
// value: ops[i] and the iterators give a TimerOp equal to the one pushed or set. A deque of
// records: growing it never holds two copies (millions of ops).
class TimerOps {
 public:
  void push_back(const TimerOp& op);
  TimerOp operator[](size_t i) const { return unpack(ops_[i]); }
  TimerOp front() const { return (*this)[0]; }
  size_t size() const { return ops_.size(); }
  bool empty() const { return ops_.empty(); }
  // A file's ops are pushed with the event's pid / tid and no lane yet; once its lane names are
  // known, `resolve` fills pp_rank / tp_rank / lane of the first op of each of the file's lanes
  // (in the order they first appear, so the first op of an unnamed lane is the one it throws
  // for), and every op of that lane reads them. Ops pushed after it are a new file's.
  void resolve_file_lanes(const std::function<void(TimerOp&)>& resolve);
  // Ops pushed from here on are a new file's (their lanes are entries of their own, never an
  // earlier file's); resolve_file_lanes ends a file so too.
  void start_file();

  class const_iterator {
   public:
    using value_type = TimerOp;
    using difference_type = std::ptrdiff_t;
    const_iterator() = default;
    TimerOp operator*() const { return ops_->unpack(*it_); }
    const_iterator& operator++() {
      ++it_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator c = *this;
      ++it_;
      return c;
    }
    bool operator==(const const_iterator& o) const { return it_ == o.it_; }

   private:
    friend class TimerOps;
    const TimerOps* ops_ = nullptr;
    std::deque<TimerOpRecord>::const_iterator it_{};
  };
  const_iterator begin() const { return at(ops_.begin()); }
  const_iterator end() const { return at(ops_.end()); }
  const_iterator begin_at(size_t i) const { return at(ops_.begin() + static_cast<std::ptrdiff_t>(i)); }

 private:
  struct Worker {
    int32_t dp_rank = 0, tid = 0, pp_rank = 0, tp_rank = 0;
    TimerLane lane = TimerLane::COMPUTE;
    bool operator==(const Worker&) const = default;
  };
  struct WorkerHash {
    size_t operator()(const Worker& w) const;
  };
  TimerOp unpack(const TimerOpRecord& r) const;
  const_iterator at(std::deque<TimerOpRecord>::const_iterator it) const {
    const_iterator c;
    c.ops_ = this;
    c.it_ = it;
    return c;
  }
  std::deque<TimerOpRecord> ops_;
  std::vector<Worker> workers_;
  std::vector<size_t> first_op_;                            // per worker: its first op
  std::unordered_map<Worker, uint32_t, WorkerHash> index_;  // the current file's workers
  size_t file_first_worker_ = 0;                            // the current file's first entry
  uint32_t last_worker_ = UINT32_MAX;  // the entry the last op used: ops of one lane come in runs
};

// Every timer op of one or more files (one file per job, or one per DP rank).
struct TimerTrace {
  StringTable strings;
  TimerOps ops;
  std::vector<std::string> sources;
  std::vector<std::string> notes;  // e.g. complete events that are no timer op, per file
  // (DP rank = pid, PP rank) of every thread_name metadata event naming a timer lane, with the
  // file that declared it: a worker declared here with no op is a hole the what-if refuses.
  std::map<std::pair<int32_t, int32_t>, std::string> declared_workers;
  // Each step's span over the files read so far: its first start and last end, with the op
  // (byte, "ts") and file (index into sources) of each. One step's ops across all files of a job
  // lie within 7 days (read_timer_trace checks each file it adds against the others).
  struct StepSpan {
    int64_t start = 0, end = 0;
    int64_t start_offset = 0, end_offset = 0;
    int64_t end_op_ts = 0;  // the "ts" (ns) of the op that ends last
    size_t start_file = 0, end_file = 0;
  };
  std::map<int32_t, StepSpan> step_spans;
};

// Reads the timer ops of `path` into `out`. Throws TraceError naming the file, byte offset and
// event for malformed input, a slice whose thread has no "PP rank p, TP rank t, lane" name, a
// step or seq_id out of int32, a "ts" beyond ±kMaxAbsTsNs, an event claiming to be a timer op
// that is malformed (args.step or args.seq_id given but not an integer, or given on an event
// whose "ph" is not "X"; an "X" event named as one of kMegatronTimerNames without them), and a
// file with no timer op at all (saying how many events it holds), and a step whose ops span
// more than 7 days, in this file or with the files `out` already holds (naming the files).
void read_timer_trace(const std::string& path, TimerTrace& out);
// The same with `flat_events` false: every event through the full (simdjson) parse instead of
// the flat-event reader (docs/whatif.md "Benchmark"); the same result by contract — the oracle of
// tests and of the chrome_json fuzz target.
void read_timer_trace(const std::string& path, TimerTrace& out, bool flat_events);

}  // namespace ppstream::analyze
