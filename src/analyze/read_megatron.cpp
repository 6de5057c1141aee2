// Reads Megatron timer traces (megatron.h) for the what-if analysis: the one Chrome scanner with
// the union ScanSpec; only timer ops and thread names are kept.
#include <fmt/format.h>

#include <cstdint>

#include "chrome_reader.h"
#include "mappers.h"
#include "ppstream/analyze/megatron.h"

namespace ppstream::analyze {

void read_timer_trace(const std::string& path, TimerTrace& out) { read_timer_trace(path, out, true); }

void read_timer_trace(const std::string& path, TimerTrace& out, bool flat_events) {
  detail::LaneNames lanes;
  const size_t first = out.ops.size();  // this file's ops go straight into `out` (no copy)
  size_t seen = 0, other = 0;
  detail::scan_chrome(
      path, flat_events ? detail::timer_scan_spec() : detail::chrome_scan_spec(),
      [&](const detail::RawEvent& ev) {
        ++seen;
        if (ev.ph == 'M') {
          if (ev.pid && ev.tid && !ev.args.meta_name.empty() && ev.name == "thread_name")
            lanes.thread[{*ev.pid, *ev.tid}] = std::string(ev.args.meta_name);
          return;
        }
        if (!ev.ts_ns) {
          throw TraceError(fmt::format("{}: byte {}: event #{} '{}': complete event without \"ts\"", path, ev.offset,
                                       ev.index, ev.name));
        }
        if (ev.dur_ns && (*ev.dur_ns < 0 || *ev.dur_ns > kMaxDurNs)) {
          throw TraceError(fmt::format("{}: byte {}: event #{} '{}': \"dur\" {:.3f} µs; expected 0 .. 7 days", path,
                                       ev.offset, ev.index, ev.name, static_cast<double>(*ev.dur_ns) / 1e3));
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
                                 path, seen));
  }
  for (const auto& [key, text] : lanes.thread)
    if (const auto l = parse_timer_lane(text); l && key.first >= 0 && key.first <= INT32_MAX)
      out.declared_workers.emplace(std::pair{static_cast<int32_t>(key.first), l->pp_rank}, path);
  detail::TimerLaneResolver resolve(path, lanes);
  for (size_t i = first; i < out.ops.size(); ++i) resolve(out.ops[i]);
  if (other > 0) {
    out.notes.push_back(fmt::format("{}: {} complete events are no timer op (no args.step / args.seq_id); not read",
                                    path, other));
  }
  out.sources.push_back(path);
}

}  // namespace ppstream::analyze
