// Rule `communicator-order`: the collectives a rank issues on one communicator (its shard or
// replicate group, or one named group of COLLECTIVEs) from different streams must be ordered
// by happens-before. NCCL and HCCL run one communicator's collectives one after another in
// issue order (the engine does too for the HSDP groups, docs/semantics.md "Communicators"; a
// named group relies on this rule instead); without a RECORD/WAIT chain the later one silently waits
// for the earlier one's stream, a hidden dependency the schedule does not show (and a hang
// when the earlier one waits on the later one's stream).
#include <optional>

#include <fmt/format.h>

#include "verify/report.h"
#include "verify/vector_clock.h"

namespace ppstream::verify_detail {

namespace {

// One rank's collectives on one communicator, in program order: consecutive ones on different
// streams need a RECORD/WAIT chain.
void check_sequence(const engine::Topology& t, int32_t p, const std::vector<int32_t>& seq, const std::string& comm,
                    std::optional<RankClocks>& clocks, Report& rep) {
  const int32_t base = t.instr_base[p];
  for (size_t k = 1; k < seq.size(); ++k) {
    const int32_t a = seq[k - 1] - base, b = seq[k] - base;
    if (rep.instr(p, a).stream == rep.instr(p, b).stream) continue;  // FIFO on the stream
    if (!clocks) clocks.emplace(t, p);
    if (clocks->hb(a, b)) continue;
    rep.add("communicator-order", p, b,
            fmt::format("{} and {} run on the same {} communicator from different streams with no "
                        "RECORD/WAIT chain between them; the communicator runs them in issue order, so this "
                        "one silently waits for the other: order them with an event",
                        rep.op(p, b), rep.local(p, a), comm));
  }
}

}  // namespace

void check_communicator_order(const engine::Topology& t, Report& rep) {
  for (const engine::NamedGroup& ng : t.named) {
    if (!ng.ok) continue;
    for (size_t m = 0; m < ng.seq.size(); ++m) {
      const int32_t p = ng.member_prog[m];
      if (p == kNone || t.skip(p) || ng.seq[m].size() < 2) continue;
      std::optional<RankClocks> clocks;
      check_sequence(t, p, ng.seq[m], "group " + ng.spec.group, clocks, rep);
    }
  }
  for (int32_t p = 0; p < t.programs(); ++p) {
    if (t.skip(p)) continue;
    std::optional<RankClocks> clocks;  // built only for a rank with a cross-stream pair
    for (GroupKind kind : engine::kGroupKinds)
      check_sequence(t, p, t.group_seq[kind][p], fmt::format("{}-group", to_string(kind)), clocks, rep);
  }
}

}  // namespace ppstream::verify_detail
