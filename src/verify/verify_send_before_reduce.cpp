// Rule `send-before-reduce` (policy async): on the compute stream, no REDUCE_GRAD and no WAIT of
// an event recorded on the `reduce` stream may come, in program order, before the BATCH that
// sends the input grad of a stage's last backward — otherwise the reduction's straggler tail
// delays the downstream rank's backward (the problem this project exists to fix).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "ppstream/program/deps.h"
#include "verify/report.h"
#include "ppstream/program/streams.h"

namespace ppstream::verify_detail {
namespace {

using streams::kCompute;
using streams::kReduce;

struct LastSend {
  int32_t batch = kNone;  // BATCH holding SEND_B of the stage's last backward
  int32_t b = kNone;      // that backward (B or I)
};

}  // namespace

void check_send_before_reduce(const engine::Topology& t, Report& rep) {
  if (t.set->policy != ReducePolicy::ASYNC) return;
  for (int32_t p = 0; p < t.programs(); ++p) {
    if (t.skip(p)) continue;
    const auto& instrs = t.program(p).instrs;
    std::vector<LastSend> sends;  // per stage: the send of its last input grad (program/deps.h)
    for (const StageBackward& sb : stage_backwards(t.program(p)))
      if (sb.send) sends.push_back({*sb.send, sb.last_input_grad});
    if (sends.empty()) continue;
    std::sort(sends.begin(), sends.end(), [](const LastSend& a, const LastSend& c) { return a.batch < c.batch; });
    const int32_t latest = sends.back().batch;
    for (int32_t i = 0; i < latest; ++i) {
      const Instr& in = instrs[i];
      if (in.stream != kCompute) continue;
      bool reduction_wait = in.op == OpKind::REDUCE_GRAD;
      if (in.op == OpKind::WAIT) {
        const int32_t rec = t.synced_record(p, i);
        reduction_wait = rec != kNone && instrs[rec].stream == kReduce;
      }
      if (!reduction_wait) continue;
      const LastSend& next = *std::find_if(sends.begin(), sends.end(), [&](const LastSend& s) { return s.batch > i; });
      rep.add("send-before-reduce", p, i,
              fmt::format("{} waits for a reduction on compute before {}, the send of the last backward {}; "
                          "issue the send first and wait only before OPT_STEP",
                          rep.op(p, i), rep.local(p, next.batch), rep.local(p, next.b)));
    }
  }
}

}  // namespace ppstream::verify_detail
