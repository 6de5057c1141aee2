// The verification grid (see grid.h).
#include "ppstream/grid/grid.h"

#include <fmt/format.h>

#include <exception>
#include <stdexcept>

#include "ppstream/lower/lower.h"
#include "ppstream/verify/verify.h"

namespace ppstream {

std::string summarize(const PipelineConfig& c) {
  return fmt::format("pp{} vpp{} mb{} {} {} overlap_p2p={} overlap_b_f={} mode={} shard={} replicate={} reduce_grad={}",
                     c.pipeline_parallel_size, c.pipeline_parallel_interleave_num, c.micro_batch_num,
                     to_string(c.schedule), to_string(c.pipeline_parallel_p2p_transport),
                     c.pipeline_parallel_overlap_p2p, c.pipeline_parallel_overlap_b_f, to_string(c.mode),
                     c.shard_size, c.replicate_size, to_string(c.reduce_grad));
}

std::vector<PipelineConfig> grid_configs(const GridOptions& o) {
  // The config's own limits (docs/config.md); they also keep `m *= 2` below from overflowing.
  auto check = [](const char* name, int64_t v, int64_t max) {
    if (v < 1 || v > max)
      throw std::invalid_argument(fmt::format("verify --grid: {}={}: expected 1..{}", name, v, max));
  };
  check("--max-pp", o.max_pp, 65536);
  check("--max-vpp", o.max_vpp, 65536);
  check("--max-microbatches", o.max_microbatches, 1 << 20);
  if (int64_t{o.max_pp} * o.max_vpp > 65536)
    throw std::invalid_argument(fmt::format("verify --grid: --max-pp {} x --max-vpp {} = {} virtual stages; expected at most 65536",
                                            o.max_pp, o.max_vpp, int64_t{o.max_pp} * o.max_vpp));
  std::vector<PipelineConfig> out;
  for (int32_t pp = 1; pp <= o.max_pp; ++pp) {
    for (int32_t vpp = 1; vpp <= o.max_vpp; ++vpp) {
      if (vpp > 1 && pp == 1) continue;  // interleaving needs a pipeline (Megatron-LM asserts the same)
      std::vector<int32_t> mbs;
      for (int32_t m = pp; m <= o.max_microbatches; m *= 2) mbs.push_back(m);
      // pp + 1: not a multiple of pp (interleaved: PyTorch's flexible rounds, one round of pp + 1).
      if (pp + 1 <= o.max_microbatches) mbs.push_back(pp + 1);
      if (vpp == 1 && pp > 1) mbs.push_back(1);
      std::vector<ScheduleKind> schedules;
      if (vpp > 1) schedules = {ScheduleKind::INTERLEAVED_1F1B, ScheduleKind::INTERLEAVED_ZB};
      else schedules = {ScheduleKind::ONE_F_ONE_B, ScheduleKind::GPIPE, ScheduleKind::ZB_H1};
      if (vpp == 2) schedules.insert(schedules.end(), {ScheduleKind::ZBV, ScheduleKind::DUALPIPEV});  // V placement
      for (int32_t m : mbs)
        for (ScheduleKind sched : schedules)
          if (sched != ScheduleKind::DUALPIPEV || m >= 2 * pp)  // DualPipeV: m >= stages (config rule)
          for (P2PTransport t : {P2PTransport::PLAIN, P2PTransport::BATCH, P2PTransport::MULTI_STREAM})
            // overlap_b_f does not change the lowering (tests/cpp/sim/overlap_never_slower_test.cpp
            // proves the programs equal), so only overlap_p2p is varied here.
            for (int flags = 0; flags < 2; ++flags)
              for (int dp = 0; dp < 5; ++dp) {
                PipelineConfig c;
                c.pipeline_parallel_size = pp;
                c.pipeline_parallel_interleave_num = vpp;
                c.micro_batch_num = m;
                c.num_layers = pp * vpp;
                c.schedule = sched;
                c.pipeline_parallel_p2p_transport = t;
                c.pipeline_parallel_overlap_p2p = flags & 1;
                c.pipeline_parallel_overlap_b_f = false;
                c.max_active_stages = vpp;
                for (int32_t s = 0; s < pp * vpp; ++s) c.stage_layers.push_back({s, s});
                // dp: 0 none, 1 fsdp inline, 2 fsdp async, 3 hsdp inline, 4 hsdp async (no sync_last)
                if (dp == 0) {
                  c.mode = DPMode::NONE;
                  c.reduce_grad = ReducePolicy::NONE;
                } else {
                  c.mode = dp <= 2 ? DPMode::FSDP : DPMode::HSDP;
                  c.shard_size = 2;
                  c.replicate_size = c.mode == DPMode::HSDP ? 2 : 1;
                  c.reduce_grad = (dp % 2 == 0) ? ReducePolicy::ASYNC : ReducePolicy::INLINE;
                  c.sync_last_reduce = dp != 4;
                  c.reshard_after_backward = dp != 3;
                }
                out.push_back(c);
              }
    }
  }
  return out;
}

GridResult verify_grid(const GridOptions& o, const std::function<void(int64_t, int64_t)>& progress) {
  GridResult res;
  const std::vector<PipelineConfig> configs = grid_configs(o);
  LowerOptions lo;
  lo.expanded = o.expanded;
  VerifyOptions vo;
  vo.platforms = o.platforms;
  for (const PipelineConfig& c : configs) {
    ++res.configs;
    try {
      const ProgramSet set = compile(c, lo);
      const auto violations = verify(set, vo);
      res.programs_verified += static_cast<int64_t>(set.programs.size());
      for (const Program& p : set.programs) res.instructions += static_cast<int64_t>(p.instrs.size());
      if (!violations.empty())
        res.failures.push_back(summarize(c) + ": " + violations.front().to_string() +
                               fmt::format(" (+{} more)", violations.size() - 1));
    } catch (const std::exception& e) {
      res.failures.push_back(summarize(c) + ": " + e.what());
    }
    if (progress) progress(res.configs, static_cast<int64_t>(configs.size()));
  }
  return res;
}

}  // namespace ppstream
