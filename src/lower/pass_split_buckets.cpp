// Pass split-buckets (data_parallel.reduce_buckets = k > 1): each managed stage's last backward
// on the rank — the op whose end makes the stage's parameter gradients final: its last B, or with
// the split backward its last W (program/deps.h stage_backwards) — becomes k pieces in a row,
// `B mb s bucket0/k` … `B mb s bucket<k-1>/k`, each over one bucket of the stage's layers in
// backward order (ir.h bucket_layers: bucket 0 holds the last layers, so it is done first). Only
// the last piece yields the stage's input grad, so the batch sending it stays after all of them.
// place-reductions then reduces each bucket right after its piece (as Megatron's DDP buckets and
// PyTorch DDP's bucket_cap_mb start each bucket's all-reduce when its gradients are ready).
// Left whole: the stage whose reduction stays on compute after the drain under async with
// sync_last_reduce (splitting it would only add per-collective latency).
#include <algorithm>

#include "passes.h"
#include "ppstream/program/deps.h"

namespace ppstream::lower {

ProgramSet split_buckets(ProgramSet out, const PipelineConfig& cfg) {
  const int32_t k = cfg.reduce_buckets;
  if (cfg.mode == DPMode::NONE || k <= 1) return out;
  const bool keep_last = cfg.reduce_grad == ReducePolicy::ASYNC && cfg.sync_last_reduce;
  for (Program& p : out.programs) {
    const std::vector<StageBackward> stages = stage_backwards(p);
    int32_t last_pos = -1;
    for (const StageBackward& sb : stages) last_pos = std::max(last_pos, sb.last_weight_grad);
    std::vector<std::pair<size_t, Instr>> items;
    for (const StageBackward& sb : stages) {
      if (keep_last && sb.last_weight_grad == last_pos) continue;
      const auto at = static_cast<size_t>(sb.last_weight_grad);
      Instr& whole = p.instrs[at];
      for (int32_t j = 0; j + 1 < k; ++j) {
        Instr piece = whole;
        piece.bucket = Bucket{j, k};
        items.emplace_back(at, std::move(piece));
      }
      whole.bucket = Bucket{k - 1, k};  // the last piece stays where the whole backward stood
    }
    insert_before(p.instrs, std::move(items));
  }
  return out;
}

}  // namespace ppstream::lower
