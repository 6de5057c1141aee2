// Pass fsdp-unshard-reshard (sharded stages only: mode fsdp/hsdp with shard_size > 1).
// UNSHARD: local stages are unsharded in order of first use on the `fsdp` stream; the UNSHARD of
// the k-th stage is issued just before the first compute of stage k-W+1 (W = max_active_stages,
// the prefetch window: W=1 is just in time, W=v unshards everything at the start), then
// `fsdp RECORD unsharded[s]`, and compute `WAIT unsharded[s]` right before the stage's first use.
// RESHARD: with reshard_after_backward the reduction owns it (right after REDUCE_GRAD s on the
// same stream, so no second RESHARD and no cross-stream race; with buckets after the last
// bucket's); otherwise after OPT_STEP.
#include <algorithm>
#include <map>

#include "passes.h"
#include "ppstream/program/deps.h"
#include "ppstream/program/streams.h"

namespace ppstream::lower {

ProgramSet fsdp_unshard_reshard(ProgramSet out, const PipelineConfig& cfg) {
  if (!out.sharded()) return out;
  const int32_t window = std::max(1, cfg.max_active_stages > 0 ? cfg.max_active_stages
                                                                : cfg.pipeline_parallel_interleave_num);
  for (Program& p : out.programs) {
    std::vector<std::pair<int32_t, size_t>> first_use;  // (stage, index), in order of first use
    for (size_t k = 0; k < p.instrs.size(); ++k) {
      const Instr& i = p.instrs[k];
      if (!is_compute(i.op)) continue;
      if (std::none_of(first_use.begin(), first_use.end(), [&](auto& e) { return e.first == i.stage.v; }))
        first_use.emplace_back(i.stage.v, k);
    }
    std::multimap<size_t, Instr> before;  // inserted before instruction index
    for (size_t n = 0; n < first_use.size(); ++n) {
      const Stage s{first_use[n].first};
      const size_t issue_at = first_use[n + 1 >= static_cast<size_t>(window) ? n + 1 - static_cast<size_t>(window) : 0].second;
      before.emplace(issue_at, make_stage_op(OpKind::UNSHARD, streams::kFsdp, s));
      before.emplace(issue_at, make_event(OpKind::RECORD, streams::kFsdp, p.intern_event(stage_event("unsharded", s))));
    }
    // Compute waits right before first use; these go after any UNSHARD issued at the same index.
    for (auto [s, k] : first_use) before.emplace(k, make_event(OpKind::WAIT, streams::kCompute, p.intern_event(stage_event("unsharded", Stage{s}))));

    // RESHARDs right after their instruction come first: at one boundary they precede the
    // next instruction's UNSHARD/RECORD/WAIT.
    std::vector<std::pair<size_t, Instr>> items;
    for (size_t k = 0; k < p.instrs.size(); ++k) {
      const Instr& i = p.instrs[k];
      // A bucketed stage's RESHARD follows its last bucket's reduction (same stream, after all).
      if (i.op == OpKind::REDUCE_GRAD && cfg.reshard_after_backward && i.bucket.index + 1 == i.bucket.count)
        items.emplace_back(k + 1, make_stage_op(OpKind::RESHARD, i.stream, i.stage));
      if (i.op == OpKind::OPT_STEP && !cfg.reshard_after_backward)
        for (auto [s, unused] : first_use) items.emplace_back(k + 1, make_stage_op(OpKind::RESHARD, streams::kCompute, Stage{s}));
    }
    for (auto& [k, in] : before)
      if (k < p.instrs.size()) items.emplace_back(k, std::move(in));
    insert_before(p.instrs, std::move(items));
  }
  return out;
}

}  // namespace ppstream::lower
