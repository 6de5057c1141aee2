// Pass place-reductions: one REDUCE_GRAD per managed stage per step, after the stage's last
// backward on the rank (its last B, or with the split backward its last W; the send anchor is
// the last B / I — program/deps.h stage_backwards).
//   inline (legacy): B(last,s) → compute REDUCE_GRAD s → … the batch holding SEND_B(last,s)
//     (the reduction's CommHandle.wait lands on compute, before the send is issued).
//   async: B(last,s) → compute RECORD compute_ready[s] → the batch holding SEND_B(last,s) →
//     reduce WAIT compute_ready[s], reduce REDUCE_GRAD s, reduce RECORD reduce_done[s];
//     compute WAITs every reduce_done right before OPT_STEP (the one drain). Reductions are FIFO
//     on `reduce`, which serializes the shared HSDP pending queue. With sync_last_reduce the
//     rank's last-finishing stage reduces on compute after the drain (its send batch is long
//     issued): it shares the replicate/shard communicator with the async reductions, which run
//     in issue order anyway (rule communicator-order), so it must come after their reduce_done.
// The per-program body is place_program_reductions (lower/reductions.h), whose drain place is a
// parameter: OPT_STEP here; `ppstream whatif` drains a lifted Megatron program before the first
// instruction that consumed the reductions it stripped (docs/whatif.md "Counterfactual").
#include <algorithm>
#include <map>

#include "passes.h"
#include "ppstream/lower/reductions.h"
#include "ppstream/program/deps.h"
#include "ppstream/program/streams.h"

namespace ppstream::lower {

ProgramSet place_reductions(ProgramSet out, const PipelineConfig& cfg) {
  if (cfg.mode == DPMode::NONE) return out;
  const ReductionPlacement rp{cfg.reduce_grad, cfg.sync_last_reduce, {}};
  for (Program& p : out.programs) place_program_reductions(p, rp);
  return out;
}

}  // namespace ppstream::lower

namespace ppstream {

void place_program_reductions(Program& p, const ReductionPlacement& rp) {
  using namespace lower;
  if (rp.policy == ReducePolicy::NONE) return;
  {
    // Each local stage's last backward (B, or the split I / W: program/deps.h).
    const std::vector<StageBackward> stages = stage_backwards(p);
    int32_t last_stage = -1, last_pos = -1;
    for (const StageBackward& sb : stages)
      if (sb.last_weight_grad >= last_pos) last_pos = sb.last_weight_grad, last_stage = sb.stage.v;

    // Insertions keyed by "after instruction index"; applied in one rebuild.
    std::multimap<size_t, Instr> after;
    std::vector<Instr> drain;
    std::vector<Instr> sync_tail;
    for (const StageBackward& sb : stages) {
      const Stage stage = sb.stage;
      const auto last = static_cast<size_t>(sb.last_weight_grad);
      // The stage's pieces (k of them, consecutive, ending at `last`), or its whole last backward.
      std::vector<std::pair<size_t, Bucket>> pieces{{last, p.instrs[last].bucket}};
      for (int32_t j = p.instrs[last].bucket.index; j > 0; --j)
        pieces.insert(pieces.begin(), {last - pieces.size(), p.instrs[last - pieces.size()].bucket});
      for (const auto& [k, bucket] : pieces) {
        if (rp.policy == ReducePolicy::INLINE) {
          after.emplace(k, make_stage_op(OpKind::REDUCE_GRAD, streams::kCompute, stage, bucket));
          continue;
        }
        // After both the batch that sends the last input grad (none for stage 0) and the last
        // weight grad: the send is issued first, the reduction waits only for compute_ready.
        // An earlier bucket goes right after its piece: its reduction starts while the later
        // pieces compute (it never waits on compute, so the send is not held back).
        const bool final_piece = k == last;
        const size_t send_pos =
            final_piece ? std::max(k, static_cast<size_t>(sb.send.value_or(sb.last_input_grad))) : k;
        if (rp.sync_last_reduce && stage.v == last_stage) {
          sync_tail.push_back(make_stage_op(OpKind::REDUCE_GRAD, streams::kCompute, stage, bucket));
          continue;
        }
        const EventId ready = p.intern_event(stage_event("compute_ready", stage, bucket));
        const EventId done = p.intern_event(stage_event("reduce_done", stage, bucket));
        after.emplace(k, make_event(OpKind::RECORD, streams::kCompute, ready));
        after.emplace(send_pos, make_event(OpKind::WAIT, streams::kReduce, ready));
        after.emplace(send_pos, make_stage_op(OpKind::REDUCE_GRAD, streams::kReduce, stage, bucket));
        after.emplace(send_pos, make_event(OpKind::RECORD, streams::kReduce, done));
        drain.push_back(make_event(OpKind::WAIT, streams::kCompute, done));
      }
    }
    // After-items first: at one boundary they precede the drain before an OPT_STEP.
    std::vector<std::pair<size_t, Instr>> items;
    for (auto& [k, in] : after) items.emplace_back(k + 1, std::move(in));
    for (size_t k = 0; k < p.instrs.size(); ++k) {
      if (rp.drain_before ? !rp.drain_before(p, k) : p.instrs[k].op != OpKind::OPT_STEP) continue;
      for (Instr in : drain) {
        in.stream = p.instrs[k].stream;  // OPT_STEP's: compute
        items.emplace_back(k, in);
      }
      for (const Instr& in : sync_tail) items.emplace_back(k, in);
    }
    insert_before(p.instrs, std::move(items));
  }
}

}  // namespace ppstream
