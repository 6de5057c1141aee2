// The what-if artifact's parquet table as TimerOps (timer_table.h): the rows the timeline
// reader would have produced from the same job, so one lifting serves both inputs.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string_view>

#include "ppstream/analyze/timer_table.h"

namespace ppstream::analyze {
namespace {

// The lane a timer runs on, by the producer's names (the timeline says it in its thread names).
TimerLane lane_of(std::string_view name) {
  if (name.ends_with("-send") || name.ends_with("-recv")) return TimerLane::PP_COMM;
  for (std::string_view comm : {"all-gather", "reduce-scatter", "all-reduce", "clip"})
    if (name.find(comm) != std::string_view::npos) return TimerLane::DP_COMM;
  return TimerLane::COMPUTE;
}

class Rows {
 public:
  explicit Rows(const TimerColumns& c) : c_(c) {}

  [[noreturn]] void fail(size_t row, std::string_view column, const std::string& what) const {
    throw TraceError(fmt::format("{}: row {}: column {}: {}", c_.source, row, column, what));
  }

  int32_t integer(std::span<const int64_t> col, size_t row, std::string_view name, int64_t lowest) const {
    const int64_t v = col[row];
    if (v < lowest || v > std::numeric_limits<int32_t>::max())
      fail(row, name, fmt::format("{} is outside {}..{}", v, lowest, std::numeric_limits<int32_t>::max()));
    return static_cast<int32_t>(v);
  }

  int64_t nanoseconds(std::span<const double> col, size_t row, std::string_view name, double lowest_s,
                      int64_t max_ns) const {
    const double s = col[row];
    const double ns = s * 1e9;
    if (!std::isfinite(s) || s < lowest_s || std::abs(ns) > static_cast<double>(max_ns))
      fail(row, name, fmt::format("{} s: expected a finite time in seconds, {} .. {:.0f} s", s, lowest_s,
                                  static_cast<double>(max_ns) / 1e9));
    return std::llround(ns);
  }

 private:
  const TimerColumns& c_;
};

}  // namespace

void add_timer_columns(const TimerColumns& c, TimerTrace& out) {
  const size_t n = c.optype.size();
  const std::pair<std::string_view, size_t> lengths[] = {
      {"dp_rank", c.dp_rank.size()}, {"stage", c.stage.size()},     {"step", c.step.size()},
      {"seq_id", c.seq_id.size()},   {"mc", c.mc.size()},           {"mb_id", c.mb_id.size()},
      {"start_ts", c.start_s.size()}, {"duration", c.duration_s.size()}};
  for (const auto& [name, len] : lengths) {
    if (len != n)
      throw TraceError(fmt::format("{}: column {} has {} rows, column optype {}; expected one length", c.source, name,
                                   len, n));
  }
  if (n == 0) throw TraceError(fmt::format("{}: the table has no row (expected one row per Megatron timer op)", c.source));
  std::vector<uint32_t> name_id;
  std::vector<TimerLane> lane;
  for (const std::string& s : c.optype_names) {
    name_id.push_back(out.strings.intern(s));
    lane.push_back(lane_of(s));
  }
  const Rows rows(c);
  for (size_t r = 0; r < n; ++r) {
    const int32_t t = c.optype[r];
    if (t < 0 || static_cast<size_t>(t) >= c.optype_names.size())
      rows.fail(r, "optype", fmt::format("category {} of {} names", t, c.optype_names.size()));
    TimerOp op;
    op.offset = static_cast<int64_t>(r);
    op.dp_rank = rows.integer(c.dp_rank, r, "dp_rank", 0);
    op.pp_rank = rows.integer(c.stage, r, "stage", 0);
    op.step = rows.integer(c.step, r, "step", 0);
    op.seq = rows.integer(c.seq_id, r, "seq_id", 0);
    op.chunk = rows.integer(c.mc, r, "mc", -1);
    op.mb = rows.integer(c.mb_id, r, "mb_id", -1);
    op.start_ns = rows.nanoseconds(c.start_s, r, "start_ts", -static_cast<double>(kMaxAbsTsNs) / 1e9, kMaxAbsTsNs);
    op.dur_ns = rows.nanoseconds(c.duration_s, r, "duration", 0.0, kMaxDurNs);
    op.name = name_id[static_cast<size_t>(t)];
    op.lane = lane[static_cast<size_t>(t)];
    op.tid = static_cast<int32_t>(op.lane);
    out.ops.push_back(op);
  }
  out.notes.push_back(fmt::format("{}: {} rows of the artifact's table; columns rank and gmc (derived) not read, TP "
                                  "rank taken as 0",
                                  c.source, n));
  out.sources.push_back(c.source);
}

}  // namespace ppstream::analyze
