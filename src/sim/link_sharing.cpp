#include "link_sharing.h"

#include "ppstream/program/intervals.h"

namespace ppstream::sim {

std::vector<std::vector<double>> link_extras(const ProgramSet& set, const EngineResult& run, const SimCostModel& cost) {
  using Intervals = IntervalList<double>;
  const LinkSharing mode = cost.spec().link_sharing;
  std::vector<std::vector<double>> extra(set.programs.size());
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    Intervals p2p, reduce;
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      const InstrTiming& t = run.timing[p][k];
      if (i.op == OpKind::BATCH) p2p.emplace_back(t.end_ms - cost.base_batch_ms(i), t.end_ms);
      if (i.op == OpKind::REDUCE_GRAD) reduce.emplace_back(t.end_ms - cost.base_collective_ms(i), t.end_ms);
    }
    p2p = merge_intervals(std::move(p2p));
    reduce = merge_intervals(std::move(reduce));
    extra[p].assign(prog.instrs.size(), 0.0);
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      const InstrTiming& t = run.timing[p][k];
      if (i.op == OpKind::BATCH && mode != LinkSharing::P2P_PRIORITY) {
        const double o = covered_length({t.end_ms - cost.base_batch_ms(i), t.end_ms}, reduce);
        extra[p][k] = mode == LinkSharing::FAIR ? o / 2 : o;
      }
      if (i.op == OpKind::REDUCE_GRAD && mode != LinkSharing::REDUCE_PRIORITY) {
        const double o = covered_length({t.end_ms - cost.base_collective_ms(i), t.end_ms}, p2p);
        extra[p][k] = mode == LinkSharing::FAIR ? o / 2 : o;
      }
    }
  }
  return extra;
}

}  // namespace ppstream::sim
