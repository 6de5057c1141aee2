// Writes ppstream's own trace format (docs/analyze.md); the simulator and runtime use it so
// that their traces always read back through read_trace().
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze {

// Accumulates streams and slices, then writes one Chrome trace JSON document.
class TraceWriter {
 public:
  explicit TraceWriter(std::string producer, bool global_clock = true);

  // Declares stream `name` of `rank`; returns its tid. Repeated calls return the same tid.
  int64_t stream(Rank rank, const std::string& name);
  void set_pp_rank(Rank rank, int32_t pp_rank);
  // The producer's own metrics as a JSON object text (copied verbatim into the metadata).
  void set_producer_metrics(std::string json_object);

  // A work slice; times in µs. kind must not be STREAM_WAIT (use wait()). A collective member's
  // arrival delay (ms, straggler model) is written as args.arrival_delay_ms when > 0.
  void slice(Rank rank, const std::string& stream, const std::string& name, double start_us,
             double dur_us, SliceKind kind, const std::string& group = "", uint64_t bytes = 0,
             double arrival_delay_ms = 0);
  // A stream wait (`EVENT_WAIT`) on `stream` for `event`; `instr` is the WAIT's canonical text.
  void wait(Rank rank, const std::string& stream, const std::string& event,
            const std::string& instr, double start_us, double dur_us);
  // A step-marker slice on the rank's "host" lane.
  void step(Rank rank, int64_t step, double start_us, double dur_us);

  void write(std::ostream& out) const;
  std::string str() const;

 private:
  struct Event {
    Rank rank;
    int64_t tid = 0;
    std::string name;
    double start_us = 0, dur_us = 0;
    std::string args_json;  // already-rendered args object
  };
  std::string producer_;
  bool global_clock_;
  std::string metrics_json_;
  std::map<Rank, std::map<std::string, int64_t>> tids_;
  std::map<Rank, int32_t> pp_ranks_;
  std::vector<Event> events_;
};

}  // namespace ppstream::analyze
