// Pass expand-world: one program per DP rank. Rank = pp_rank * dp + dp_index and each P2P peer
// keeps the DP index (a pipeline replica talks only to itself), as in the seed's layout where
// ranks 0/4096/8192/12288 form one replica with dp = 4096.
#include "passes.h"

namespace ppstream::lower {

ProgramSet expand_world(ProgramSet out, const PipelineConfig& cfg) {
  out.world = cfg.world(true);
  const int32_t dp = out.world.dp();
  const std::vector<Program> replica = std::move(out.programs);
  out.programs.clear();
  out.programs.reserve(replica.size() * static_cast<size_t>(dp));
  for (const Program& base : replica) {
    for (int32_t d = 0; d < dp; ++d) {
      Program p = base;
      p.rank = Rank{base.pp_rank * dp + d};
      for (Instr& i : p.instrs)
        for (P2POp& op : i.p2p) op.peer = Rank{op.peer.v * dp + d};
      out.programs.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace ppstream::lower
