// Rule `collective-order`: in an expanded set every member of a shard or replicate group
// issues the same sequence of collectives (kind, stage and bucket) — the engine pairs them by
// position, so a different order means mismatched tensors or a hang on the real system.
#include <map>

#include <fmt/format.h>

#include "verify/report.h"

namespace ppstream::verify_detail {

void check_collective_order(const engine::Topology& t, Report& rep) {
  if (!t.set->world.expanded) return;  // one member per group in the set: nothing to compare
  for (GroupKind kind : engine::kGroupKinds) {
    std::map<int32_t, std::vector<int32_t>> members;  // group id → programs, in rank order
    for (int32_t p = 0; p < t.programs(); ++p)
      if (t.group_of[kind][p] != kNone) members[t.group_of[kind][p]].push_back(p);
    for (const auto& [gid, progs] : members) {
      const int32_t ref = progs.front();
      const auto& want = t.group_seq[kind][ref];
      for (size_t m = 1; m < progs.size(); ++m) {
        const int32_t p = progs[m];
        const auto& have = t.group_seq[kind][p];
        const size_t n = std::min(want.size(), have.size());
        size_t k = 0;
        while (k < n) {
          const Instr& a = t.instr(want[k]);
          const Instr& b = t.instr(have[k]);
          if (a.op != b.op || a.stage != b.stage || a.bucket != b.bucket) break;
          ++k;
        }
        if (k < n) {
          const int32_t i = have[k] - t.instr_base[p];
          rep.add("collective-order", p, i,
                  fmt::format("{} is the {} {}-group collective of r{}, but the {} of r{} is {}", rep.op(p, i),
                              ordinal(k + 1), to_string(kind), rep.rank(p).v, ordinal(k + 1), rep.rank(ref).v,
                              rep.remote(ref, want[k] - t.instr_base[ref])));
        } else if (have.size() != want.size()) {
          const bool extra_here = have.size() > want.size();
          const int32_t xp = extra_here ? p : ref;
          const int32_t xi = (extra_here ? have[n] : want[n]) - t.instr_base[xp];
          rep.add("collective-order", xp, xi,
                  fmt::format("{} is the {} {}-group collective of r{}, but r{} issues only {} in that group",
                              rep.op(xp, xi), ordinal(n + 1), to_string(kind), rep.rank(xp).v,
                              rep.rank(extra_here ? ref : p).v, n));
        }
      }
    }
  }
}

}  // namespace ppstream::verify_detail
