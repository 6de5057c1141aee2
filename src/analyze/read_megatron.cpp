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

bool timer_name(std::string_view name) {
  return std::find(kMegatronTimerNames.begin(), kMegatronTimerNames.end(), name) != kMegatronTimerNames.end();
}

// What marks an event as a Megatron timer op (docs/whatif.md "Input"): args.step or args.seq_id
// given (whatever its value), or an "X" event named as a timer. Such an event must be an "X"
// event with both as integers; throws TraceError naming the file, byte, event and what is wrong.
// False for an event that makes no such claim (metadata, other slices: a note counts those).
bool claims_timer_op(const std::string& path, const detail::RawEvent& ev) {
  using detail::IntArg;
  const auto given = [&](IntArg a) { return ev.args.given(static_cast<size_t>(a)); };
  const bool args = given(IntArg::STEP) || given(IntArg::SEQ_ID);
  if (!args && !(ev.ph == 'X' && timer_name(ev.name))) return false;
  const auto where = [&] { return fmt::format("{}: byte {}: event #{} '{}'", path, ev.offset, ev.index, ev.name); };
  if (ev.ph != 'X') {
    throw TraceError(fmt::format("{}: gives args.step / args.seq_id (a Megatron timer op) but its \"ph\" is {}; "
                                 "expected \"X\"",
                                 where(), ev.ph == 0 ? std::string("missing") : fmt::format("'{}'", ev.ph)));
  }
  for (const auto& [a, key] : {std::pair{IntArg::STEP, "step"}, std::pair{IntArg::SEQ_ID, "seq_id"}}) {
    if (!detail::arg(ev, a)) {
      throw TraceError(fmt::format("{}: a Megatron timer op with args.{} {}; expected an integer (a timer op gives "
                                   "args.step and args.seq_id, docs/whatif.md \"Input\")",
                                   where(), key, given(a) ? "that is no integer" : "missing"));
    }
  }
  return true;
}

// One step's ops on one file's workers lie within kMaxDurNs (7 days, the bound of one op): a
// step spanning more holds a corrupt "ts" (within ±kMaxAbsTsNs, yet days off the step's other
// ops: read as it is, the lifting sees a cycle or a step of weeks). Names the file, the step and
// the two ops that span it.
void check_step_spans(const std::string& path, const TimerOps& ops, size_t first) {
  struct Span {
    int64_t start = 0, end = 0;  // the first start, the last end
    size_t lo = 0, hi = 0;       // their ops
  };
  std::map<int32_t, Span> spans;
  auto last = spans.end();
  size_t i = first;
  for (auto it = ops.begin_at(first); it != ops.end(); ++it, ++i) {
    const TimerOp op = *it;
    const int64_t end = op.start_ns + op.dur_ns;
    if (last == spans.end() || last->first != op.step)
      last = spans.try_emplace(op.step, Span{op.start_ns, end, i, i}).first;
    Span& s = last->second;
    if (op.start_ns < s.start) s.start = op.start_ns, s.lo = i;
    if (end > s.end) s.end = end, s.hi = i;
  }
  for (const auto& [step, s] : spans) {
    if (s.end - s.start <= kMaxDurNs) continue;  // in int64: both within the bounds
    const TimerOp lo = ops[s.lo], hi = ops[s.hi];
    throw TraceError(fmt::format("{}: step {} spans {:.1f} days, from the op at byte {} (\"ts\" {:.3f} µs) to the end of "
                                 "the op at byte {} (\"ts\" {:.3f} µs); one step's ops lie within 7 days: a \"ts\" is "
                                 "corrupt",
                                 path, step, static_cast<double>(s.end - s.start) / 86400e9, lo.offset,
                                 static_cast<double>(lo.start_ns) / 1e3, hi.offset, static_cast<double>(hi.start_ns) / 1e3));
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
        const bool timer = claims_timer_op(path, ev);
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
  check_step_spans(path, out.ops, first);
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
