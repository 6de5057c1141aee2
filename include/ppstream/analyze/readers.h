// Trace readers, one per format, all mapping into the timeline model (timeline.h).
// Memory bound: a Chrome trace is read in 64 KiB chunks (a .gz decompressed on the fly) and
// parsed one event at a time, so the file is never held whole; what stays is the kept device
// slices and interned names; host events are skipped (docs/analyze.md "Memory").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze {

// Loads every path into `set`. A path may be:
//  - a Chrome trace JSON (`.json` or `.json.gz`): ours, PyTorch Kineto or Ascend trace_view;
//  - an Ascend profiler directory (`*_ascend_pt` / `*_ascend_ms`, or ASCEND_PROFILER_OUTPUT);
//  - an Ascend `step_trace_time.csv` or `communication.json` (per-rank or cluster form);
//  - a `ppstream train` run directory (run.json and programs.json beside rank{r}/): every rank's
//    host trace rank{r}/trace.json (a --profile run's profiler output is its profile/
//    subdirectory, a directory of the profiler dirs: docs/analyze.md "Train run directories");
//  - a directory of the above (read in name order).
// Throws TraceError (file, offset/event index, expected) on unknown or malformed input and
// when the loaded set has no device lanes at all.
// Chrome trace files are read on PPSTREAM_THREADS threads (default 2; 1 reads on one thread),
// with the same result as one thread (docs/analyze.md "Cluster scale").
void read_paths(const std::vector<std::string>& paths, TraceSet& set);
// The same on `threads` reader threads (1: one after another on the caller's thread).
void read_paths(const std::vector<std::string>& paths, TraceSet& set, unsigned threads);

// The first of `paths` that names a file (or directory) an earlier path already names, or nullopt;
// spelt "LATER (the same file as EARLIER)" when the two spellings differ, so that "… is given
// twice" names both. Paths compare by file identity (device and inode: `./a`, `a` and a link to
// a are one file); a path that does not exist compares by the weakly canonical spelling of what
// it names (through dangling symbolic links: the file a write would create; its reader then says
// it is missing). whatif and tune --from-trace use it for "given twice"
// (docs/whatif.md "Input").
std::optional<std::string> repeated_path(const std::vector<std::string>& paths);
// The first of `inputs` that is the same file as `out` (device and inode), or nullopt (also when
// `out` does not exist yet). Every "an output must not be an input" check uses it: the CLI's
// output paths (src/cli/output_path.h), simulate's (SimOptions::inputs), Python's whatif.
std::optional<std::string> input_named_by(const std::string& out, const std::vector<std::string>& inputs);
// The first two of the files a command will write, `outs` (what names it: "--svg", "trace", and its
// path), that are one file (compared as repeated_path compares), worded "A PATH and B PATH2 are the
// same file" ("svg=PATH" where the name ends in '=', a Python keyword), or nullopt. Every "two outputs must differ" check uses it (simulate's outputs, whatif's
// CLI and Python outputs), beside input_named_by: one would silently overwrite the other.
std::optional<std::string> same_output(const std::vector<std::pair<std::string, std::string>>& outs);

// The single-format readers (read_paths dispatches to them).
void read_chrome_trace(const std::string& path, TraceSet& set);  // ours / Kineto / trace_view
void read_ascend_dir(const std::string& dir, TraceSet& set);
void read_step_trace_csv(const std::string& path, const std::string& producer, TraceSet& set);
void read_communication_json(const std::string& path, TraceSet& set);
// communication_matrix.json (step → p2p|collective → op → "src-dst" → link); `rank` from
// profiler_info. Links with src ≠ dst of P2P ops name the peers.
void read_communication_matrix(const std::string& path, std::optional<Rank> rank, TraceSet& set);
// profiler_metadata.json: its "parallel_group_info" rank lists (other keys are ignored).
void read_profiler_metadata(const std::string& path, TraceSet& set);
// After all inputs are read (read_paths calls it): maps every matrix link to global ranks through
// its group's rank list, and joins P2P links with their HCCL lane op on the rank's timeline,
// adding the peer to the op when both global ranks are known. Call once per set.
void resolve_comm_links(TraceSet& set);

}  // namespace ppstream::analyze
