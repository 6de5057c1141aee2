// The lowering pipeline: the pass list for a configuration and `compile`, which runs it and
// verifies the IR after every pass (naming the pass that broke it).
#include <fmt/format.h>

#include <stdexcept>

#include "passes.h"
#include "ppstream/lower/lower.h"
#include "ppstream/verify/verify.h"

namespace ppstream {

std::vector<Pass> lowering_pipeline(const PipelineConfig& cfg) {
  std::vector<Pass> passes = {
      {"compute-order", lower::compute_order},
      {"insert-p2p", lower::insert_p2p},
      {"assign-p2p-streams", lower::assign_p2p_streams},
  };
  if (cfg.mode != DPMode::NONE && cfg.reduce_buckets > 1) passes.push_back({"split-buckets", lower::split_buckets});
  if (cfg.mode != DPMode::NONE) passes.push_back({"place-reductions", lower::place_reductions});
  if (cfg.mode != DPMode::NONE && cfg.reduce_grad == ReducePolicy::ASYNC && cfg.reduce_order == ReduceOrder::PRIORITY)
    passes.push_back({"order-reductions", lower::order_reductions});
  if (cfg.mode != DPMode::NONE && cfg.shard_size > 1)
    passes.push_back({"fsdp-unshard-reshard", lower::fsdp_unshard_reshard});
  return passes;
}

ProgramSet compile(const PipelineConfig& cfg, const LowerOptions& opts) {
  validate(cfg);
  std::vector<Pass> passes = lowering_pipeline(cfg);
  if (opts.expanded) passes.push_back({"expand-world", lower::expand_world});
  ProgramSet set;
  for (size_t n = 0; n < passes.size(); ++n) {
    set = passes[n].run(std::move(set), cfg);
    if (opts.dump) opts.dump(passes[n].name, set);
    if (!opts.verify_each_pass) continue;
    VerifyOptions vo;
    vo.after_pass = passes[n].name;
    // Completeness rules (reduce-once, reshard-once, drain) hold only once every pass has run.
    vo.complete = n + 1 == passes.size();
    require_verified(set, vo, fmt::format("lower: pass {} produced an invalid program", passes[n].name));
  }
  return set;
}

}  // namespace ppstream
