// Dispatch from a validated config to a generator, and the action spelling "3F1".
#include <string>

#include "ppstream/schedule/schedule.h"

namespace ppstream {

ComputeOrder make_schedule(const PipelineConfig& cfg) {
  const int32_t p = cfg.pipeline_parallel_size;
  const int32_t v = cfg.pipeline_parallel_interleave_num;
  const int32_t m = cfg.micro_batch_num;
  if (!is_interleaved(cfg.schedule) && v != 1) {
    throw ConfigError(std::string("config: pipeline_parallel_interleave_num=") + std::to_string(v) +
                      " needs schedule interleaved_1f1b, got " + to_string(cfg.schedule) +
                      "; use interleaved_1f1b or pipeline_parallel_interleave_num=1");
  }
  switch (cfg.schedule) {
    case ScheduleKind::GPIPE: return schedule_gpipe(p, m);
    case ScheduleKind::ONE_F_ONE_B: return schedule_1f1b(p, m);
    case ScheduleKind::INTERLEAVED_1F1B: return schedule_interleaved_1f1b(p, v, m);
    case ScheduleKind::ZB_H1: return schedule_zb_h1(p, m);
    case ScheduleKind::INTERLEAVED_ZB: return schedule_interleaved_zb(p, v, m);
    case ScheduleKind::ZBV: return schedule_zbv(p, m);
    case ScheduleKind::DUALPIPEV: return schedule_dualpipev(p, m);
  }
  throw ConfigError("config: unknown schedule kind " + std::to_string(static_cast<int>(cfg.schedule)));
}

OpKind op_kind(const ComputeAction& a) {
  if (!a.backward) return OpKind::F;
  return a.part == BackwardPart::INPUT ? OpKind::I : a.part == BackwardPart::WEIGHT ? OpKind::W : OpKind::B;
}

std::string to_string(const ComputeAction& a) {
  return std::to_string(a.mb.v) + ppstream::to_string(op_kind(a)) + std::to_string(a.stage.v);
}

}  // namespace ppstream
