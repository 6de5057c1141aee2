// Pass order-reductions: the queue order of a rank's async reductions on the reduction stream.
//   program (default): unchanged — each stage's [WAIT compute_ready, REDUCE_GRAD, RECORD
//     reduce_done] right after its send batch, so the queue follows the backward order.
//   priority: every such group of the rank moves to where the last of them stood (nothing issued
//     earlier waits for them: the drain and the sync tail sit before OPT_STEP, later still) and
//     they queue there largest first — most layers, i.e. the largest gradient, whose straggler
//     tail costs most — ties in stage order. Moving a group later keeps its RECORD
//     compute_ready before its WAIT; every rank of a replicate or shard group holds the same
//     stages, so the collective order stays the same inside each group (rule communicator-order).
// Inline reductions and the sync_last_reduce tail are on compute and are not touched.
#include <algorithm>

#include "passes.h"
#include "ppstream/program/streams.h"

namespace ppstream::lower {
namespace {

// An async reduction's three instructions on the reduction stream, at `pos`, `pos+1`, `pos+2`.
bool is_reduce_group(const std::vector<Instr>& in, size_t pos) {
  return pos + 2 < in.size() && in[pos].op == OpKind::WAIT && in[pos].stream == streams::kReduce &&
         in[pos + 1].op == OpKind::REDUCE_GRAD && in[pos + 1].stream == streams::kReduce &&
         in[pos + 2].op == OpKind::RECORD && in[pos + 2].stream == streams::kReduce;
}

}  // namespace

ProgramSet order_reductions(ProgramSet out, const PipelineConfig& cfg) {
  if (cfg.mode == DPMode::NONE || cfg.reduce_grad != ReducePolicy::ASYNC || cfg.reduce_order == ReduceOrder::PROGRAM)
    return out;
  for (Program& p : out.programs) {
    std::vector<std::vector<Instr>> groups;
    std::vector<Instr> kept;
    size_t last = 0;  // index in `kept` after which the groups go
    for (size_t k = 0; k < p.instrs.size();) {
      if (is_reduce_group(p.instrs, k)) {
        groups.push_back({p.instrs[k], p.instrs[k + 1], p.instrs[k + 2]});
        last = kept.size();
        k += 3;
        continue;
      }
      kept.push_back(std::move(p.instrs[k++]));
    }
    if (groups.size() < 2) {
      p.instrs = std::move(kept);
      if (!groups.empty()) p.instrs.insert(p.instrs.begin() + static_cast<std::ptrdiff_t>(last), groups[0].begin(), groups[0].end());
      continue;
    }
    auto layers = [&](const std::vector<Instr>& g) { return cfg.stage_layers.at(static_cast<size_t>(g[1].stage.v)).count(); };
    std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
      if (layers(a) != layers(b)) return layers(a) > layers(b);
      return a[1].stage < b[1].stage;
    });
    std::vector<Instr> queued;
    for (auto& g : groups) queued.insert(queued.end(), g.begin(), g.end());
    kept.insert(kept.begin() + static_cast<std::ptrdiff_t>(last), queued.begin(), queued.end());
    p.instrs = std::move(kept);
  }
  return out;
}

}  // namespace ppstream::lower
