// Rule `collective-order`: in an expanded set every member of a shard or replicate group
// issues the same sequence of collectives (kind, stage and bucket), and every member of a named group
// (COLLECTIVE) the same sequence of op types in that group — the engine pairs them by
// position, so a different order means mismatched tensors or a hang on the real system.
#include <map>

#include <fmt/format.h>

#include "verify/report.h"

namespace ppstream::verify_detail {

namespace {

// Member p's sequence `have` in one group against the reference member ref's `want`: the first
// position where `same` fails, or a length difference, is one violation. `label` names a
// sequence's collectives before the rank ("shard-group collective of", "collective of group g on").
template <class Same>
void compare_sequence(const engine::Topology& t, Report& rep, int32_t ref, const std::vector<int32_t>& want,
                      int32_t p, const std::vector<int32_t>& have, Same same, const std::string& label) {
  const size_t n = std::min(want.size(), have.size());
  size_t k = 0;
  while (k < n && same(want[k], have[k])) ++k;
  if (k < n) {
    const int32_t i = have[k] - t.instr_base[p];
    rep.add("collective-order", p, i,
            fmt::format("{} is the {} {} r{}, but the {} of r{} is {}", rep.op(p, i), ordinal(k + 1), label,
                        rep.rank(p).v, ordinal(k + 1), rep.rank(ref).v, rep.remote(ref, want[k] - t.instr_base[ref])));
  } else if (have.size() != want.size()) {
    const bool extra_here = have.size() > want.size();
    const int32_t xp = extra_here ? p : ref;
    const int32_t xi = (extra_here ? have[n] : want[n]) - t.instr_base[xp];
    rep.add("collective-order", xp, xi,
            fmt::format("{} is the {} {} r{}, but r{} issues only {} in that group", rep.op(xp, xi), ordinal(n + 1),
                        label, rep.rank(xp).v, rep.rank(extra_here ? ref : p).v, n));
  }
}

// Named groups: member 0's sequence is the reference (members are formed only for groups with
// no structural error, so every member is in the set); op types are compared.
void check_named_order(const engine::Topology& t, Report& rep) {
  for (const engine::NamedGroup& ng : t.named) {
    if (!ng.ok) continue;
    const int32_t ref = ng.member_prog.front();
    const auto same = [&](int32_t a, int32_t b) {
      return t.program(ref).collective(t.instr(a).coll).op == t.program(t.prog_of_global(b)).collective(t.instr(b).coll).op;
    };
    for (size_t m = 1; m < ng.seq.size(); ++m) {
      const int32_t p = ng.member_prog[m];
      if (t.skip(p) || t.skip(ref)) continue;
      compare_sequence(t, rep, ref, ng.seq.front(), p, ng.seq[m], same, "collective of group " + ng.spec.group + " on");
    }
  }
}

}  // namespace

void check_collective_order(const engine::Topology& t, Report& rep) {
  check_named_order(t, rep);
  if (!t.set->world.expanded) return;  // one member per group in the set: nothing to compare
  for (GroupKind kind : engine::kGroupKinds) {
    std::map<int32_t, std::vector<int32_t>> members;  // group id → programs, in rank order
    for (int32_t p = 0; p < t.programs(); ++p)
      if (t.group_of[kind][p] != kNone) members[t.group_of[kind][p]].push_back(p);
    const auto same = [&](int32_t a, int32_t b) {
      return t.instr(a).op == t.instr(b).op && t.instr(a).stage == t.instr(b).stage &&
             t.instr(a).bucket == t.instr(b).bucket;
    };
    const std::string label = fmt::format("{}-group collective of", to_string(kind));
    for (const auto& [gid, progs] : members)
      for (size_t m = 1; m < progs.size(); ++m)
        compare_sequence(t, rep, progs.front(), t.group_seq[kind][progs.front()], progs[m], t.group_seq[kind][progs[m]],
                         same, label);
  }
}

}  // namespace ppstream::verify_detail
