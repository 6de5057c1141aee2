// Trace readers, one per format, all mapping into the timeline model (timeline.h).
// Memory bound: a JSON file is held once in a padded buffer (its size + 64 bytes; a .gz is
// decompressed into one such buffer) plus the kept device slices; host events are skipped.
#pragma once

#include <string>
#include <vector>

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze {

// Loads every path into `set`. A path may be:
//  - a Chrome trace JSON (`.json` or `.json.gz`): ours, PyTorch Kineto or Ascend trace_view;
//  - an Ascend profiler directory (`*_ascend_pt` / `*_ascend_ms`, or ASCEND_PROFILER_OUTPUT);
//  - an Ascend `step_trace_time.csv` or `communication.json` (per-rank or cluster form);
//  - a directory of the above (read in name order).
// Throws TraceError (file, offset/event index, expected) on unknown or malformed input and
// when the loaded set has no device lanes at all.
void read_paths(const std::vector<std::string>& paths, TraceSet& set);

// The single-format readers (read_paths dispatches to them).
void read_chrome_trace(const std::string& path, TraceSet& set);  // ours / Kineto / trace_view
void read_ascend_dir(const std::string& dir, TraceSet& set);
void read_step_trace_csv(const std::string& path, const std::string& producer, TraceSet& set);
void read_communication_json(const std::string& path, TraceSet& set);
// communication_matrix.json (step → p2p|collective → op → "src-dst" → link); `rank` from
// profiler_info. Links with src ≠ dst of P2P ops name the peers.
void read_communication_matrix(const std::string& path, std::optional<Rank> rank, TraceSet& set);

}  // namespace ppstream::analyze
