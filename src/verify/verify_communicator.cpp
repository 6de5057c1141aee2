// Rule `communicator-order`: the collectives a rank issues on one communicator (its shard or
// replicate group) from different streams must be ordered by happens-before. NCCL and HCCL run
// one communicator's collectives one after another in issue order (the engine does too,
// docs/semantics.md "Communicators"); without a RECORD/WAIT chain the later one silently waits
// for the earlier one's stream, a hidden dependency the schedule does not show (and a hang
// when the earlier one waits on the later one's stream).
#include <optional>

#include <fmt/format.h>

#include "verify/report.h"
#include "verify/vector_clock.h"

namespace ppstream::verify_detail {

void check_communicator_order(const engine::Topology& t, Report& rep) {
  for (int32_t p = 0; p < t.programs(); ++p) {
    if (t.skip(p)) continue;
    std::optional<RankClocks> clocks;  // built only for a rank with a cross-stream pair
    const int32_t base = t.instr_base[p];
    for (GroupKind kind : engine::kGroupKinds) {
      const auto& seq = t.group_seq[kind][p];
      for (size_t k = 1; k < seq.size(); ++k) {
        const int32_t a = seq[k - 1] - base, b = seq[k] - base;
        if (rep.instr(p, a).stream == rep.instr(p, b).stream) continue;  // FIFO on the stream
        if (!clocks) clocks.emplace(t, p);
        if (clocks->hb(a, b)) continue;
        rep.add("communicator-order", p, b,
                fmt::format("{} and {} run on the same {}-group communicator from different streams with no "
                            "RECORD/WAIT chain between them; the communicator runs them in issue order, so this "
                            "one silently waits for the other: order them with an event",
                            rep.op(p, b), rep.local(p, a), to_string(kind)));
      }
    }
  }
}

}  // namespace ppstream::verify_detail
