// Rule `deadlock`: the engine, with zero cost, must complete every instruction under each
// requested platform; every blocked stream head becomes one violation.
#include <fmt/format.h>

#include "engine/engine_state.h"
#include "verify/report.h"

namespace ppstream::verify_detail {

void check_deadlock(const engine::Topology& topo, const std::vector<PlatformKind>& platforms, Report& rep) {
  for (PlatformKind k : platforms) {
    const EngineResult r = engine::run_on_topology(*topo.set, topo, {k, nullptr});
    if (r.completed) continue;
    std::string cycle;
    for (int32_t x : r.cycle_blocked)
      cycle += fmt::format("r{} {} #{} -> ", r.blocked[x].rank.v, r.blocked[x].stream, r.blocked[x].index);
    if (!r.cycle_blocked.empty()) {
      const Blocked& f = r.blocked[r.cycle_blocked.front()];
      cycle += fmt::format("r{} {} #{}", f.rank.v, f.stream, f.index);
    }
    for (size_t b = 0; b < r.blocked.size(); ++b) {
      const Blocked& bl = r.blocked[b];
      const int32_t prog = topo.prog_of_rank(bl.rank);
      bool in_cycle = false;
      for (int32_t x : r.cycle_blocked) in_cycle |= x == static_cast<int32_t>(b);
      rep.add("deadlock", prog, bl.index,
              fmt::format("under {}: {} never completes: waiting for {}{}", to_string(k), rep.op(prog, bl.index),
                          bl.waiting_for, in_cycle ? "; waiting cycle " + cycle : ""));
    }
  }
}

}  // namespace ppstream::verify_detail
