// Megatron timer ops given as columns: the what-if artifact's parquet table (ByteDance Seed,
// "Understanding Stragglers in Large Model Training Using What-if Analysis", OSDI 2025; its
// readme's field list), read in Python with pyarrow (python/ppstream/whatif.py) and handed over
// as arrays. The rows become the TimerOps the timeline reader (megatron.h) produces, so the
// what-if lifts one in-memory job whatever the file was. docs/whatif.md "Input: the parquet table".
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ppstream/analyze/megatron.h"

namespace ppstream::analyze {

// One table, column by column; every span has the same length (the row count). Column names as
// in the artifact: dp_rank, stage (PP rank), step, optype, start_ts and duration (seconds),
// seq_id, mc (model chunk within the stage, -1: none), mb_id (-1: none). The table's `rank`
// (global rank, TP included) and `gmc` (global chunk = mc · PP + stage) are derived columns and
// not read; the TP rank is 0 (the artifact traces one TP rank per worker).
struct TimerColumns {
  std::string source;  // the file the table came from, for messages
  std::span<const int64_t> dp_rank, stage, step, seq_id, mc, mb_id;
  std::span<const int32_t> optype;  // index into optype_names (a dictionary-encoded column)
  std::vector<std::string> optype_names;
  std::span<const double> start_s, duration_s;
};

// Appends one TimerOp per row to `out` (start and duration rounded to ns; `offset` = the row
// index; the lane by name: *-send / *-recv pp-comm, all-gather / reduce-scatter / all-reduce /
// clip dp-comm, the rest compute) and the source to out.sources. Throws TraceError naming the
// source, the row and the column for: columns of different lengths, an optype index outside
// optype_names, dp_rank / stage / step / seq_id outside 0..INT32_MAX, mc / mb_id outside
// -1..INT32_MAX, a start or duration that is not finite or beyond 7 days, a negative duration,
// and a table with no row.
void add_timer_columns(const TimerColumns& cols, TimerTrace& out);

}  // namespace ppstream::analyze
