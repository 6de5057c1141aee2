// Rules `reduce-once` (mode != none: each local stage has exactly one REDUCE_GRAD; mode none:
// none at all), `reshard-once` (sharded: each local stage exactly one UNSHARD and one RESHARD;
// otherwise none) and the counting half of `drain` (exactly one OPT_STEP when mode != none,
// at most one otherwise).
#include <map>

#include <fmt/format.h>

#include "verify/report.h"

namespace ppstream::verify_detail {
namespace {

std::string stage_list(const std::vector<int32_t>& stages) {
  std::string out;
  for (size_t k = 0; k < stages.size(); ++k) out += fmt::format("{}s{}", k ? ", " : "", stages[k]);
  return out;
}

// Exactly one `kind` per local stage when `wanted`, none when not.
void count_per_stage(const engine::Topology& t, int32_t p, OpKind kind, bool wanted, const char* rule,
                     const std::string& why_none, Report& rep) {
  const Program& prog = t.program(p);
  const World& w = t.set->world;
  std::vector<int32_t> local;  // run only on valid ranks (Topology::skip): pp_rank < pp, pp * vpp <= 65536
  for (const Stage s : local_stages(prog.pp_rank, w)) local.push_back(s.v);
  std::map<int32_t, int32_t> first;  // stage → first index
  for (size_t k = 0; k < prog.instrs.size(); ++k) {
    const Instr& in = prog.instrs[k];
    if (in.op != kind) continue;
    const auto i = static_cast<int32_t>(k);
    if (!wanted) {
      rep.add(rule, p, i, fmt::format("{}: {}", rep.op(p, i), why_none));
      continue;
    }
    if (std::find(local.begin(), local.end(), in.stage.v) == local.end()) {
      rep.add(rule, p, i,
              fmt::format("{}: stage s{} is not local to r{} (PP rank {} holds {})", rep.op(p, i), in.stage.v,
                          prog.rank.v, prog.pp_rank, stage_list(local)));
      continue;
    }
    auto [it, fresh] = first.emplace(in.stage.v, i);
    if (!fresh)
      rep.add(rule, p, i,
              fmt::format("{} is the second {} of s{} in the step (first: {})", rep.op(p, i), to_string(kind),
                          in.stage.v, rep.local(p, it->second)));
  }
  if (!wanted) return;
  for (int32_t s : local)
    if (!first.count(s))
      rep.add(rule, p, kNone, fmt::format("stage s{} has no {} on r{} (mode {})", s, to_string(kind), prog.rank.v,
                                          to_string(t.set->mode)));
}

}  // namespace

void check_once(const engine::Topology& t, Report& rep) {
  const ProgramSet& set = *t.set;
  const bool managed = set.mode != DPMode::NONE;
  const std::string not_sharded =
      managed ? fmt::format("the set is not sharded (mode {}, shard {})", to_string(set.mode), set.world.shard)
              : std::string("the set has mode none");
  for (int32_t p = 0; p < t.programs(); ++p) {
    if (t.skip(p)) continue;
    count_per_stage(t, p, OpKind::REDUCE_GRAD, managed, "reduce-once", "the set has mode none", rep);
    count_per_stage(t, p, OpKind::UNSHARD, set.sharded(), "reshard-once", not_sharded, rep);
    count_per_stage(t, p, OpKind::RESHARD, set.sharded(), "reshard-once", not_sharded, rep);
  }
}

void check_drain_count(const engine::Topology& t, Report& rep) {
  const bool managed = t.set->mode != DPMode::NONE;
  for (int32_t p = 0; p < t.programs(); ++p) {
    if (t.skip(p)) continue;
    const Program& prog = t.program(p);
    int32_t first = kNone;
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      if (prog.instrs[k].op != OpKind::OPT_STEP) continue;
      const auto i = static_cast<int32_t>(k);
      if (first == kNone)
        first = i;
      else
        rep.add("drain", p, i,
                fmt::format("{} is a second optimizer step on r{} (first: {})", rep.op(p, i), prog.rank.v,
                            rep.local(p, first)));
    }
    if (managed && first == kNone)
      rep.add("drain", p, kNone,
              fmt::format("r{} has no OPT_STEP (mode {} needs exactly one)", prog.rank.v, to_string(t.set->mode)));
  }
}

}  // namespace ppstream::verify_detail
