// Pass compute-order: the schedule's F/B/I/W per PP rank on `compute`, then OPT_STEP.
#include "passes.h"
#include "ppstream/schedule/schedule.h"
#include "ppstream/program/streams.h"

namespace ppstream::lower {

ProgramSet compute_order(ProgramSet out, const PipelineConfig& cfg) {
  out.world = cfg.world(false);
  out.mode = cfg.mode;
  out.policy = cfg.mode == DPMode::NONE ? ReducePolicy::NONE : cfg.reduce_grad;
  out.programs.clear();
  const ComputeOrder order = make_schedule(cfg);
  for (int32_t r = 0; r < cfg.pipeline_parallel_size; ++r) {
    Program p;
    p.rank = Rank{r};
    p.pp_rank = r;
    for (const ComputeAction& a : order[static_cast<size_t>(r)]) p.instrs.push_back(make_compute(op_kind(a), a.mb, a.stage));
    Instr opt;
    opt.op = OpKind::OPT_STEP;
    opt.stream = streams::kCompute;
    p.instrs.push_back(std::move(opt));
    out.programs.push_back(std::move(p));
  }
  return out;
}

}  // namespace ppstream::lower
