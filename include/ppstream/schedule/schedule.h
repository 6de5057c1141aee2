// Schedule generators: the compute order F(mb, s) / B(mb, s) of every PP rank for one step.
// Pure data: no communication, no streams (the lowering passes add those).
#pragma once

#include <string>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/program/ir.h"

namespace ppstream {

// Which part of the backward an action runs: the fused B, or the split backward's I (input
// gradient, dX) or W (weight gradient, dW) — program/deps.h says what each needs.
enum class BackwardPart : uint8_t { FULL, INPUT, WEIGHT };

// One compute action, printed "3F1" = F of mb 3, stage 1 ("3B1", "3I1", "3W1").
struct ComputeAction {
  bool backward = false;
  Microbatch mb;
  Stage stage;
  BackwardPart part = BackwardPart::FULL;  // backward actions only
  auto operator<=>(const ComputeAction&) const = default;
};
// The IR op of an action: F, B, I or W.
OpKind op_kind(const ComputeAction& a);

// order[pp_rank] = that rank's compute actions in execution order.
using ComputeOrder = std::vector<std::vector<ComputeAction>>;

// The generators throw std::invalid_argument naming the value when pp, vpp or microbatches
// is below 1 (or, for the interleaved schedule, microbatches is not a multiple of its rounds).
//
// GPipe: all forwards, then all backwards in microbatch order (torch's ScheduleGPipe).
ComputeOrder schedule_gpipe(int32_t pp, int32_t microbatches);
// 1F1B (PipeDream-flush): warm-up of min(pp-1-r, m) forwards, steady 1F1B, cool-down backwards.
ComputeOrder schedule_1f1b(int32_t pp, int32_t microbatches);
// Interleaved 1F1B (Narayanan et al., SC'21, §2.2; Megatron-LM
// forward_backward_pipelining_with_interleaving; PyTorch ScheduleInterleaved1F1B): chunk c of
// rank r is stage c*pp + r. Microbatches go in rounds of g = m / rounds, rounds =
// interleaved_rounds(pp, m) = max(1, m / pp) (config.h) (g = pp when pp divides m, as Megatron). The k-th
// forward of a rank (k = 0 .. m*v-1) runs chunk (k % (g*v)) / g on microbatch
// (k / (g*v))*g + k % g; the k-th backward the same microbatch on chunk v-1 - (k % (g*v))/g.
// Warm-up min((pp-r-1)*2 + (v-1)*g, m*v) forwards, then pairs (forward k+warm-up, backward k),
// then the remaining backwards. With v = 1 this is still that formula (warm-up 2*(pp-r-1)), not
// schedule_1f1b. Requires microbatches % rounds == 0 (PyTorch's rule; also validated by config).
ComputeOrder schedule_interleaved_1f1b(int32_t pp, int32_t vpp, int32_t microbatches);
// Interleaved zero bubble (PyTorch ScheduleInterleavedZeroBubble, "ZB1P" of Qi et al., ICLR
// 2024): the interleaved order with warm-up (pp-r-1) + (v-1)*g, each backward split into I then
// W; rank r runs the oldest queued W after each I from its r-th backward on, the rest at the end.
ComputeOrder schedule_interleaved_zb(int32_t pp, int32_t vpp, int32_t microbatches);
// ZB-H1 (Qi et al., ICLR 2024, §3.1): 1F1B with the backward split into I then W; rank r runs
// the W of a microbatch after r further I's (the deferred W's fill 1F1B's cool-down bubble).
// Uniform F = I = W, free P2P, m >= pp: step = (3m + pp - 1) units (tests/cpp/schedule).
ComputeOrder schedule_zb_h1(int32_t pp, int32_t microbatches);
// ZBV (PyTorch ScheduleZBVZeroBubble; Qi et al. 2024 "Pipeline Parallelism with Controllable
// Memory", the V-shaped zero-bubble schedule): V placement (rank r runs stages r and 2pp-1-r,
// ir.h Placement::V), every backward split into I and W. Rank r: warm-up 2(pp-r)-1 forwards of
// stage r, r pairs (F of stage 2pp-1-r, F of stage r), pp-r triples F/I/W on stage 2pp-1-r; steady
// F/I/W on stage r then on 2pp-1-r; cool-down I's with the W's they defer. Built for
// max(2pp-1, m) microbatches, then the actions of microbatches >= m dropped (as PyTorch).
ComputeOrder schedule_zbv(int32_t pp, int32_t microbatches);
// DualPipeV (DeepSeek-V3 technical report §3.2.1, the V-shaped half of DualPipe; PyTorch
// ScheduleDualPipeV): V placement; the steady phase runs overlapped forward/backward pairs of
// the two chunks (PyTorch's OVERLAP_F_B, written here as its F followed by its fused B), the
// cool-down switches from B to I (+ deferred W) half-way through. Requires microbatches >= 2pp
// (PyTorch's rule: at least as many microbatches as stages).
ComputeOrder schedule_dualpipev(int32_t pp, int32_t microbatches);
// Dispatch on cfg.schedule. Throws ConfigError when gpipe/1f1b get pipeline_parallel_interleave_num > 1.
ComputeOrder make_schedule(const PipelineConfig& cfg);

std::string to_string(const ComputeAction& a);  // "3F1", "15B7"

// --- Unit-time model: a dependency-only replay used by format_grid and the bubble figures ---
// Every action takes one slot (F = B = 1 slot per virtual stage; real backwards cost ~2x, which
// this model deliberately ignores), P2P is free, a rank runs its actions in its order, each in
// the earliest slot after its predecessor on the rank and after its dependencies finished:
//   F(mb,s) needs F(mb,s-1) (s > 0); B(mb,s) needs F(mb,s) and, unless s is the last stage,
//   B(mb,s+1). The number of stages S is (largest stage in the order) + 1.
struct UnitTimeline {
  std::vector<std::vector<int64_t>> slot;  // slot[r][i]: the slot in which order[r][i] runs
  int64_t makespan = 0;                    // slots until the last action of any rank finished
};
// `pl`: where the stages live (ir.h Placement; V for zbv / dualpipev). Throws
// std::invalid_argument when an action runs on the wrong rank (pp_rank_of_stage != r), appears
// twice, or the order cannot complete (the message lists every blocked rank and what it waits for).
UnitTimeline simulate_unit_time(const ComputeOrder& order, Placement pl = Placement::LOOP);
// The same with fused groups: fuse_next[r][i] makes order[r][i] and order[r][i+1] one group
// (overlap_b_f's B+F pair) that starts when both actions' dependencies are met and whose
// outputs are visible only after its last slot (ranks missing from fuse_next fuse nothing).
UnitTimeline simulate_unit_time(const ComputeOrder& order, const std::vector<std::vector<bool>>& fuse_next,
                                Placement pl = Placement::LOOP);
// idle[r] = makespan - (actions of rank r): the slots rank r does no compute within the step.
std::vector<int64_t> idle_slots(const ComputeOrder& order, Placement pl = Placement::LOOP);
// Bubble ratio as Narayanan et al. (SC'21, §2.2) define it: bubble time / ideal compute time
// = sum of idle slots / sum of busy slots over all ranks. Expected values (F = B = 1 slot):
// 1F1B and GPipe (p-1)/m; Megatron interleaved (p-1)/(v*m). As a fraction of the whole step
// the 1F1B value is (p-1)/(m+p-1) = idle / makespan. `vpp` must match the order
// (S == pp*vpp, else std::invalid_argument).
double bubble_ratio_unit(const ComputeOrder& order, int32_t vpp, Placement pl = Placement::LOOP);

// Grid view of simulate_unit_time: a header row of slot numbers, then one row per rank
// ("r0 0F0 1F0 .   0B0 …"), cells "3F1" or "." for idle, left-aligned to a common width,
// trailing blanks trimmed — the view torch's validation errors print.
std::string format_grid(const ComputeOrder& order, Placement pl = Placement::LOOP);

}  // namespace ppstream
