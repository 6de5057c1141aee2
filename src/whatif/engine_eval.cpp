// The lifted worlds the engine evaluates (engine_eval.h; docs/whatif.md "Evaluation on the
// engine").
#include "engine_eval.h"

#include "ppstream/verify/verify.h"
#include "verify/verify_topology.h"

namespace ppstream::whatif {

Job rows_view(const Job& job, int32_t rows) {
  Job v;
  v.dp = rows;
  v.pp = job.pp;
  v.vpp = job.vpp;
  v.steps = job.steps;
  v.ops = job.ops;
  return v;
}

EngineWorld::TermTable EngineWorld::term_table(const Tape& tape) const {
  // GraphCostModel's value per cost term (view_field), on the term's DP row of the step.
  TermTable t;
  for (const TapeEntry& e : tape.entries()) {
    if (e.cost == TapeCost::NONE) continue;
    const Program& p = gp.set.programs[static_cast<size_t>(e.prog)];
    const int32_t k = gp.op_of[static_cast<size_t>(e.prog)][static_cast<size_t>(e.index)];
    const Term m{k, static_cast<int32_t>(p.rank.v % gp.dp), view_field(e.cost, gp, k)};
    const bool arrival = e.cost == TapeCost::ARRIVAL || e.cost == TapeCost::ARRIVAL_OR_EXTERNAL;
    (arrival ? t.arrival : t.fixed).push_back(m);
    if (m.field != ViewField::ZERO) (arrival ? t.batch_arrival : t.batch_fixed).push_back(m);
    if (m.field != ViewField::ZERO && m.field != ViewField::DELAY) (arrival ? t.no_delay_arrival : t.no_delay_fixed).push_back(m);
  }
  return t;
}

bool EngineWorld::zero_term(const TapeEntry& e, bool no_delays) const {
  const ViewField f = view_field(e.cost, gp, gp.op_of[static_cast<size_t>(e.prog)][static_cast<size_t>(e.index)]);
  return f == ViewField::ZERO || (no_delays && f == ViewField::DELAY);
}

void EngineWorld::require_verified(const VerifyOptions& opts, const std::string& what) {
  if (auto violations = verify_topology(topo, opts); !violations.empty()) throw VerifyError(what, std::move(violations));
  verified_under.insert(verified_under.end(), opts.platforms.begin(), opts.platforms.end());
}

EngineWorlds lift_worlds(const Job& job, const Graph& g, std::vector<std::string>& notes, const std::string& what,
                         bool with_reduced) {
  EngineWorlds w;
  w.full = std::make_unique<EngineWorld>(programs_of_graph(job, g, notes));
  w.full->require_verified({}, what);
  if (with_reduced && job.dp > 2) {
    std::vector<std::string> same;  // the full world's notes already say what this one would
    w.reduced = std::make_unique<EngineWorld>(programs_of_graph(rows_view(job, 2), g, same));
    w.reduced->require_verified({}, what + " (the reduced world of two DP rows)");
  }
  return w;
}

}  // namespace ppstream::whatif
