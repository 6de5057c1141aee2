// Rule `event`: each event is recorded at most once per step, and every WAIT comes after its
// RECORD in program order (a WAIT on a not-yet-recorded event is a no-op on CUDA/Ascend: a race).
#include <fmt/format.h>

#include "verify/report.h"

namespace ppstream::verify_detail {

void check_events(const engine::Topology& t, Report& rep) {
  for (int32_t p = 0; p < t.programs(); ++p) {
    if (t.skip(p)) continue;
    const auto& instrs = t.program(p).instrs;
    std::vector<int32_t> recorded(static_cast<size_t>(t.event_base[p + 1] - t.event_base[p]), kNone);
    for (size_t i = 0; i < instrs.size(); ++i) {
      const Instr& in = instrs[i];
      if (in.op != OpKind::RECORD && in.op != OpKind::WAIT) continue;
      const int32_t e = t.event_id(t.global(p, static_cast<int32_t>(i)));
      const auto ii = static_cast<int32_t>(i);
      if (in.op == OpKind::RECORD) {
        if (recorded[e] == kNone) {
          recorded[e] = ii;
        } else {
          rep.add("event", p, ii,
                  fmt::format("{} records {} a second time on r{} (first: {})", rep.op(p, ii), t.program(p).event_name(in.event),
                              rep.rank(p).v, rep.local(p, recorded[e])));
        }
        continue;
      }
      if (recorded[e] != kNone) continue;
      const int32_t later = t.event_first_record[t.event_base[p] + e];
      rep.add("event", p, ii,
              fmt::format("{} has no RECORD before it on r{}{}", rep.op(p, ii), rep.rank(p).v,
                          later == kNone ? " (never recorded)"
                                         : fmt::format(" (recorded later: {})", rep.local(p, later))));
    }
  }
}

}  // namespace ppstream::verify_detail
