// Reads Megatron timer traces (megatron.h) for the what-if analysis: the one Chrome scanner with
// the union ScanSpec; only timer ops and thread names are kept.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>

#include "chrome_reader.h"
#include "mappers.h"
#include "ppstream/analyze/megatron.h"

namespace ppstream::analyze {
namespace {

// One step's ops on one file's workers lie within kMaxDurNs (7 days, the bound of one op): a
// step spanning more holds a corrupt "ts" (within ±kMaxAbsTsNs, yet days off the step's other
// ops: read as it is, the lifting sees a cycle or a step of weeks). Names the file, the step and
// the two ops that span it. Then the same over every file of `out` (the job's files: a file's
// clock days off another's, the lifting would see a launch slowdown of days), naming both files;
// this file's spans join out.step_spans.
void check_step_spans(const std::string& path, TimerTrace& out, size_t first) {
  using Span = TimerTrace::StepSpan;
  const TimerOps& ops = out.ops;
  const size_t file = out.sources.size();  // this file's index once it is added
  std::map<int32_t, Span> spans;
  auto last = spans.end();
  for (auto it = ops.begin_at(first); it != ops.end(); ++it) {
    const TimerOp op = *it;
    const int64_t end = op.start_ns + op.dur_ns;
    if (last == spans.end() || last->first != op.step)
      last = spans.try_emplace(op.step, Span{op.start_ns, end, op.offset, op.offset, op.start_ns, file, file}).first;
    Span& s = last->second;
    if (op.start_ns < s.start) s.start = op.start_ns, s.start_offset = op.offset;
    if (end > s.end) s.end = end, s.end_offset = op.offset, s.end_op_ts = op.start_ns;
  }
  const auto file_of = [&](size_t f) { return f == file ? path : out.sources[f]; };
  const auto check = [&](int32_t step, const Span& s) {
    if (s.end - s.start <= kMaxDurNs) return;  // in int64: both within the bounds
    const std::string where = s.start_file == s.end_file && s.start_file == file
                                  ? path
                                  : fmt::format("{} and {}", file_of(s.start_file), file_of(s.end_file));
    const std::string lo = s.start_file == s.end_file ? "" : file_of(s.start_file) + ": ";
    const std::string hi = s.start_file == s.end_file ? "" : file_of(s.end_file) + ": ";
    throw TraceError(fmt::format("{}: step {} spans {:.1f} days, from the op at {}byte {} (\"ts\" {:.3f} µs) to the end "
                                 "of the op at {}byte {} (\"ts\" {:.3f} µs); one step's ops lie within 7 days{}: a "
                                 "\"ts\" is corrupt",
                                 where, step, static_cast<double>(s.end - s.start) / 86400e9, lo, s.start_offset,
                                 static_cast<double>(s.start) / 1e3, hi, s.end_offset,
                                 static_cast<double>(s.end_op_ts) / 1e3,
                                 s.start_file == s.end_file ? "" : " across the files of a job"));
  };
  for (const auto& [step, s] : spans) check(step, s);
  for (const auto& [step, s] : spans) {
    const auto [it, fresh] = out.step_spans.try_emplace(step, s);
    if (fresh) continue;
    Span& all = it->second;
    if (s.start < all.start) all.start = s.start, all.start_offset = s.start_offset, all.start_file = s.start_file;
    if (s.end > all.end) all.end = s.end, all.end_offset = s.end_offset, all.end_op_ts = s.end_op_ts, all.end_file = s.end_file;
    check(step, all);
  }
}

}  // namespace

void read_timer_trace(const std::string& path, TimerTrace& out) { read_timer_trace(path, out, true); }

void read_timer_trace(const std::string& path, TimerTrace& out, bool flat_events) {
  detail::LaneNames lanes;
  const size_t first = out.ops.size();  // this file's ops go straight into `out` (no copy)
  out.ops.start_file();
  size_t other = 0;
  const size_t events = detail::scan_chrome(
      path, detail::timer_scan_spec(flat_events),
      [&](const detail::RawEvent& ev) {
        if (ev.ph == 'M') {
          if (ev.pid && ev.tid && !ev.args.meta_name.empty() && ev.name == "thread_name")
            lanes.thread[{*ev.pid, *ev.tid}] = std::string(ev.args.meta_name);
          return;
        }
        const bool timer = detail::claims_timer_op(path, ev, true);
        if (ev.ph != 'X') return;  // instants, flows, counters (no claim: checked above)
        if (!ev.ts_ns) {
          throw TraceError(fmt::format("{}: byte {}: event #{} '{}': complete event without \"ts\"", path, ev.offset,
                                       ev.index, ev.name));
        }
        // The analyzer's bound (timeline.h): starts, ends and their differences stay in int64.
        if (*ev.ts_ns > kMaxAbsTsNs || *ev.ts_ns < -kMaxAbsTsNs) {
          throw TraceError(fmt::format("{}: byte {}: event #{} '{}': \"ts\" {:.3f} µs is beyond ±{:.0e} µs; expected "
                                       "a profiler timestamp",
                                       path, ev.offset, ev.index, ev.name, static_cast<double>(*ev.ts_ns) / 1e3,
                                       static_cast<double>(kMaxAbsTsNs) / 1e3));
        }
        if (ev.dur_ns && (*ev.dur_ns < 0 || *ev.dur_ns > kMaxDurNs)) {
          throw TraceError(fmt::format("{}: byte {}: event #{} '{}': \"dur\" {:.3f} µs; expected 0 .. 7 days", path,
                                       ev.offset, ev.index, ev.name, static_cast<double>(*ev.dur_ns) / 1e3));
        }
        if (!timer) {
          ++other;
          return;
        }
        if (auto op = detail::megatron_event_at(path, ev, out.strings)) {
          // A timer op without "dur" is not a zero-length op (S would move, silently).
          if (!ev.dur_ns)
            throw TraceError(fmt::format("{}: byte {}: event #{} '{}': timer op without \"dur\" (expected µs)", path,
                                         ev.offset, ev.index, ev.name));
          out.ops.push_back(*op);
        } else {
          ++other;
        }
      },
      [](const detail::TopValue&) {});
  if (out.ops.size() == first) {
    throw TraceError(fmt::format("{}: no Megatron timer op among {} events (expected \"X\" events with args.step "
                                 "and args.seq_id on threads named \"PP rank p, TP rank t, <lane>\")",
                                 path, events));
  }
  check_step_spans(path, out, first);
  for (const auto& [key, text] : lanes.thread)
    if (const auto l = parse_timer_lane(text); l && key.first >= 0 && key.first <= INT32_MAX)
      out.declared_workers.emplace(std::pair{static_cast<int32_t>(key.first), l->pp_rank}, path);
  detail::TimerLaneResolver resolve(path, lanes);
  out.ops.resolve_file_lanes([&](TimerOp& op) { resolve(op); });
  if (other > 0) {
    out.notes.push_back(fmt::format("{}: {} complete events are no timer op (no args.step / args.seq_id); not read",
                                    path, other));
  }
  out.sources.push_back(path);
}

}  // namespace ppstream::analyze
