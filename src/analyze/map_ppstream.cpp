// Field map of ppstream's own trace format (docs/analyze.md, trace_format.h).
#include <fmt/format.h>

#include <limits>

#include "mappers.h"
#include "ppstream/analyze/trace_format.h"

namespace ppstream::analyze::detail {
namespace tf = ppstream::analyze::trace_format;

std::optional<Draft> map_ppstream(const std::string& path, const RawEvent& ev) {
  if (ev.ph != 'X' || ev.args.kind.empty()) return std::nullopt;
  if (!ev.pid || !ev.tid) {
    throw TraceError(fmt::format("{}: byte {}: event #{} '{}': expected integer \"pid\" (rank) and "
                                 "\"tid\" (stream)",
                                 path, ev.offset, ev.index, ev.name));
  }
  if (*ev.pid < 0 || *ev.pid > std::numeric_limits<int32_t>::max()) {  // pid is the rank: an int32 id
    throw TraceError(fmt::format("{}: byte {}: event #{} '{}': \"pid\" {} is not a rank; expected 0..{}", path,
                                 ev.offset, ev.index, ev.name, *ev.pid, std::numeric_limits<int32_t>::max()));
  }
  Draft d;
  d.stream_id = *ev.tid;
  d.stream_name = fmt::format("tid {}", *ev.tid);
  if (ev.args.kind == tf::kStepKind) {
    if (!ev.args.step) {
      throw TraceError(fmt::format("{}: byte {}: event #{} '{}': a step marker needs an integer "
                                   "args.step",
                                   path, ev.offset, ev.index, ev.name));
    }
    d.step = ev.args.step;
    return d;
  }
  auto kind = parse_slice_kind(ev.args.kind);
  if (!kind) {
    throw TraceError(fmt::format("{}: byte {}: event #{} '{}': args.kind '{}' is not one of compute, "
                                 "p2p, collective, stream_wait, host, memory, step",
                                 path, ev.offset, ev.index, ev.name, ev.args.kind));
  }
  d.kind = *kind;
  d.group = std::string(ev.args.group);
  d.event = ev.args.event;
  d.bytes = ev.args.bytes && *ev.args.bytes > 0 ? static_cast<uint64_t>(*ev.args.bytes) : 0;
  if (d.kind == SliceKind::P2P) {
    try {
      d.p2p = tf::parse_batch_parts(ev.name);
    } catch (const TraceError& e) {
      throw TraceError(fmt::format("{}: byte {}: event #{}: {}", path, ev.offset, ev.index, e.what()));
    }
  }
  return d;
}

}  // namespace ppstream::analyze::detail
