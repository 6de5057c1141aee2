// Field map of Ascend trace_view.json hardware tasks ("Ascend Hardware" process, one thread per
// stream): EVENT_WAIT_SQE tasks are stream waits, hcom_* tasks are HCCL communication.
#include <fmt/format.h>

#include "json_input.h"
#include "mappers.h"

namespace ppstream::analyze::detail {

std::optional<Draft> map_ascend(const RawEvent& ev) {
  if (ev.ph != 'X' || (!ev.args.stream_id && ev.args.task_type.empty())) return std::nullopt;
  Draft d;
  d.stream_id = ev.args.stream_id.value_or(ev.tid.value_or(0));
  d.stream_name = fmt::format("Stream {}", d.stream_id);
  std::string_view task = ev.args.task_type;
  if (task == "EVENT_RECORD_SQE" || task == "EVENT_RECORD") return std::nullopt;  // markers
  if (task == "EVENT_WAIT_SQE" || task == "NOTIFY_WAIT_SQE") {
    d.kind = SliceKind::STREAM_WAIT;
  } else if (istarts_with(ev.name, "hcom_")) {
    bool p2p = icontains(ev.name, "send") || icontains(ev.name, "receive") ||
               icontains(ev.name, "recv");
    d.kind = p2p ? SliceKind::P2P : SliceKind::COLLECTIVE;
  } else if (istarts_with(ev.name, "MEMCPY_ASYNC") || task == "MEMCPY_ASYNC") {
    d.kind = SliceKind::MEMORY;
  } else {
    d.kind = SliceKind::COMPUTE;
  }
  return d;
}

}  // namespace ppstream::analyze::detail
