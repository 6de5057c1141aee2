// Reads ppstream's own trace format (docs/analyze.md "Our trace format") for the what-if: one
// `simulate --trace` file (one step), a `replay --trace DIR` directory (one file per rank,
// replay.POLICY.rankN.json, steps marked on each rank's host lane), or a `ppstream train` run
// directory (run.json, programs.json, config.yaml, rank{r}/trace.json: docs/runtime.md "Run
// directory"; steps marked on each rank's host lane). Every work slice by step,
// rank and canonical instruction text, with its member arrival delay (args.arrival_delay_ms).
// Times in ms from the step's start.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ppstream::whatif {

struct OurSlice {
  double start_ms = 0, end_ms = 0;
  double arrival_ms = 0;  // collectives: arrival delay after posting
  std::string kind;       // compute | p2p | collective
};

// rank → canonical text → its slices by start time (an instruction text may recur in a step: UNSHARD
// before the forward and again before the backward; the k-th slice is the k-th instruction).
using OurSlices = std::map<int32_t, std::map<std::string, std::vector<OurSlice>>>;

struct OurStep {
  int32_t step = 0;
  double measured_ms = 0;  // the step marker's length (longest over ranks), or the last slice end
  OurSlices slices;
  // A train run directory (one wall clock, `clock: global`): the slices of every rank count from
  // the step's earliest marker start over the ranks, and this is each rank's own marker start on
  // that origin (ms >= 0): the ranks begin a step at different times (the previous step ends
  // earlier on some). Empty otherwise: each rank's slices count from its own marker.
  std::map<int32_t, double> rank_start_ms;
  std::map<int32_t, double> marker_abs_ms;  // while reading: each rank's marker start, file clock
};

struct OurTrace {
  std::string path;         // the file or directory read
  std::string config_path;  // T.json.config.yaml, or DIR/replay.POLICY.config.yaml
  std::string producer;     // "simulator", "replay", "runtime" (train), …
  // A train run directory: the programs that ran (DIR/programs.json, checked against the
  // recompiled set) and the engine profile they were verified under and ran as (run.json
  // verified_under: cpu-serial on CPU). Empty otherwise (re-simulated as ascend-mindspore).
  std::string programs_path;
  std::string platform;
  std::vector<OurStep> steps;
  int64_t slices_read = 0;
  int64_t waits_skipped = 0;  // EVENT_WAIT slices: the engine derives waits, they cost nothing
};

// Throws LiftError naming the file and the event (index) on a malformed event, a slice outside every step marker, ranks with different step
// lists, a directory with no replay traces or with two policies' traces (name the prefix:
// DIR/replay.inline), or a file without ppstream metadata; for a train run directory, naming
// run.json and the key for a run.json without world_size / ranks / device / verified_under, a
// run of another node's ranks only (ranks other than 0..world_size-1), a run on a device other
// than cpu (on Ascend the host trace holds issue times, not device times: docs/whatif.md), and a
// rank without rank{r}/trace.json (naming progress/rank{r}.txt).
OurTrace read_our_trace(const std::string& path);

}  // namespace ppstream::whatif
