// `ppstream train` run directories as analyzer input (docs/analyze.md "Train run directories").
#pragma once

#include <filesystem>

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze::detail {

// A train run directory holds run.json and programs.json (written by `ppstream train` before
// any worker starts).
bool is_train_run_dir(const std::filesystem::path& dir);

// Reads the run's host traces: rank{r}/trace.json for every rank of run.json "ranks"
// [first, last] (this node's ranks). A --profile run's profiler output (DIR/profile/) is not
// read with them — the analyzer takes one trace per rank — but named in a note (it is read as
// `ppstream analyze DIR/profile`). The run's other files (programs.json, progress/, msrun_log/,
// summary.json, result.json, params.npz) are not traces. Throws TraceError naming the file and
// what was expected: run.json without "ranks" / "profile", a rank without trace.json.
// rank{r} directories outside "ranks" (an earlier run's) are skipped with a note.
void read_train_run_dir(const std::filesystem::path& dir, TraceSet& set);

}  // namespace ppstream::analyze::detail
