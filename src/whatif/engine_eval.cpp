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
