// Pass place-reductions: one REDUCE_GRAD per managed stage per step, after the stage's last
// backward on the rank.
//   inline (legacy): B(last,s) → compute REDUCE_GRAD s → … the batch holding SEND_B(last,s)
//     (the reduction's CommHandle.wait lands on compute, before the send is issued).
//   async: B(last,s) → compute RECORD compute_ready[s] → the batch holding SEND_B(last,s) →
//     reduce WAIT compute_ready[s], reduce REDUCE_GRAD s, reduce RECORD reduce_done[s];
//     compute WAITs every reduce_done right before OPT_STEP (the one drain). Reductions are FIFO
//     on `reduce`, which serializes the shared HSDP pending queue. With sync_last_reduce the
//     rank's last-finishing stage reduces on compute after the drain (its send batch is long
//     issued): it shares the replicate/shard communicator with the async reductions, which run
//     in issue order anyway (rule communicator-order), so it must come after their reduce_done.
#include <algorithm>
#include <map>

#include "passes.h"

namespace ppstream::lower {
namespace {

bool batch_sends_b(const Instr& i, Microbatch mb, Stage s) {
  if (i.op != OpKind::BATCH) return false;
  return std::any_of(i.p2p.begin(), i.p2p.end(), [&](const P2POp& op) {
    return op.kind == P2PKind::SEND_B && op.mb == mb && op.stage == s;
  });
}

}  // namespace

ProgramSet place_reductions(const ProgramSet& in, const PipelineConfig& cfg) {
  if (cfg.mode == DPMode::NONE) return in;
  ProgramSet out = in;
  for (Program& p : out.programs) {
    // Last backward of each local stage, in program order.
    std::map<int32_t, size_t> last_b;
    for (size_t k = 0; k < p.instrs.size(); ++k)
      if (p.instrs[k].op == OpKind::B) last_b[p.instrs[k].stage.v] = k;
    int32_t last_stage = -1;
    size_t last_pos = 0;
    for (auto [s, k] : last_b)
      if (k >= last_pos) last_pos = k, last_stage = s;

    // Insertions keyed by "after instruction index"; applied in one rebuild.
    std::multimap<size_t, Instr> after;
    std::vector<Instr> drain;
    std::vector<Instr> sync_tail;
    for (auto [s, k] : last_b) {
      const Stage stage{s};
      const Instr& lastb = p.instrs[k];
      if (cfg.reduce_grad == ReducePolicy::INLINE) {
        after.emplace(k, make_stage_op(OpKind::REDUCE_GRAD, "compute", stage));
        continue;
      }
      // Position of the batch that sends this backward's input grad (none for stage 0).
      size_t send_pos = k;
      for (size_t j = k + 1; j < p.instrs.size(); ++j)
        if (batch_sends_b(p.instrs[j], lastb.mb, stage)) {
          send_pos = j;
          break;
        }
      if (cfg.sync_last_reduce && s == last_stage) {
        sync_tail.push_back(make_stage_op(OpKind::REDUCE_GRAD, "compute", stage));
        continue;
      }
      const std::string ready = stage_event("compute_ready", stage);
      const std::string done = stage_event("reduce_done", stage);
      after.emplace(k, make_event(OpKind::RECORD, "compute", ready));
      after.emplace(send_pos, make_event(OpKind::WAIT, "reduce", ready));
      after.emplace(send_pos, make_stage_op(OpKind::REDUCE_GRAD, "reduce", stage));
      after.emplace(send_pos, make_event(OpKind::RECORD, "reduce", done));
      drain.push_back(make_event(OpKind::WAIT, "compute", done));
    }
    std::vector<Instr> result;
    for (size_t k = 0; k < p.instrs.size(); ++k) {
      if (p.instrs[k].op == OpKind::OPT_STEP) {
        result.insert(result.end(), drain.begin(), drain.end());
        result.insert(result.end(), sync_tail.begin(), sync_tail.end());
      }
      result.push_back(p.instrs[k]);
      auto [lo, hi] = after.equal_range(k);
      for (auto it = lo; it != hi; ++it) result.push_back(it->second);
    }
    p.instrs = std::move(result);
  }
  return out;
}

}  // namespace ppstream::lower
