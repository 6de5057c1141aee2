// Schedule generators: the compute order F(mb, s) / B(mb, s) of every PP rank for one step.
// Pure data: no communication, no streams (the lowering passes add those).
#pragma once

#include <string>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/program/ir.h"

namespace ppstream {

// One compute action, printed like PyTorch pipelining's actions: "3F1" = F of mb 3, stage 1.
struct ComputeAction {
  bool backward = false;
  Microbatch mb;
  Stage stage;
  auto operator<=>(const ComputeAction&) const = default;
};

// order[pp_rank] = that rank's compute actions in execution order.
using ComputeOrder = std::vector<std::vector<ComputeAction>>;

// GPipe: all forwards, then all backwards in microbatch order (torch's ScheduleGPipe).
ComputeOrder schedule_gpipe(int32_t pp, int32_t microbatches);
// 1F1B (PipeDream-flush): warm-up of pp-1-r forwards, steady 1F1B, cool-down backwards.
ComputeOrder schedule_1f1b(int32_t pp, int32_t microbatches);
// Megatron-LM interleaved 1F1B (Narayanan et al., SC'21, §2.2): chunk c of rank r is stage
// c*pp + r; microbatches in groups of pp per chunk; warm-up (pp-r-1)*2 + (v-1)*pp forwards.
// Requires microbatches % pp == 0 (validated by config).
ComputeOrder schedule_interleaved_1f1b(int32_t pp, int32_t vpp, int32_t microbatches);
// Dispatch on cfg.schedule.
ComputeOrder make_schedule(const PipelineConfig& cfg);

std::string to_string(const ComputeAction& a);  // "3F1", "15B7"
// Grid view (rows = ranks, columns = time slots assuming unit compute and free P2P),
// the view torch's validation errors print.
std::string format_grid(const ComputeOrder& order);

}  // namespace ppstream
