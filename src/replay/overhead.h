// Replay's own runtime costs, measured on the config's programs replayed with the communication
// model zeroed (compute durations kept; P2P latency and bandwidth terms, collective alpha and
// bandwidth terms and straggler delays zero; sizes kept). What is then left of each transfer,
// matched → end, is replay's runtime overhead (stream-thread hand-offs, the progress thread's
// polling, MPI matching, the post-time exchange), and the issue stamps give its host's issue
// rate. `replay --calibrate` turns them into cost.p2p_latency_ms, cost.collective_alpha_ms and
// cost.host_issue_ms (docs/replay.md, "Calibration"; why these keys: "Host issue and overhead").
#pragma once

#include <cstdint>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/engine/engine.h"
#include "ppstream/replay/replay.h"

namespace ppstream::replay {

// Figures of one measured step (ms). A mean is over every instruction of that kind on every rank.
struct RuntimeOverhead {
  double step_ms = 0;             // the step measured (median of the steps run)
  // The simulator's host model (the k-th instruction issued at (k+1)·h, docs/simulate.md "Host
  // issue time") fitted per rank: h = (last instruction's issue_ms) / (instruction count); the
  // median over ranks.
  double host_issue_ms = 0;
  double p2p_mean_ms = 0;         // per BATCH: end − matched (the later of its and its mirrors' posts)
  double p2p_median_ms = 0;
  // Per BATCH: max(0, (end − matched) − p2p_mean_ms), the mean over BATCHes. What replay, whose
  // transfers end at max(real completion, matched + model), still adds on average to a transfer
  // floored at the mean: E[(X − E[X])+], which a deterministic key cannot carry (half the mean
  // absolute deviation).
  double p2p_excess_ms = 0;
  // The self-consistent floor of the BATCH times X (self_consistent_floor, kFloorTolerance): the
  // key under which the simulator's transfer equals replay's expected floored one, E[max(X, m)],
  // within the tolerance — what --calibrate writes as p2p_latency_ms — and E[(X − m)+] there.
  double p2p_floor_ms = 0;
  double p2p_floor_excess_ms = 0;
  int64_t batches = 0;
  // Per collective (UNSHARD, REDUCE_GRAD): (end − the last member's arrival) / ring steps, where
  // ring steps = (shard − 1) for UNSHARD, (shard − 1) + 2·(replicate − 1) for REDUCE_GRAD — the
  // step counts of the model's alpha terms (sim/cost_model.h).
  double collective_step_mean_ms = 0;
  double collective_step_median_ms = 0;
  double collective_step_excess_ms = 0;  // per ring step, as p2p_excess_ms: E[(X − mean)+]
  double collective_step_floor_ms = 0;   // per ring step, as p2p_floor_ms: collective_alpha_ms
  double collective_step_floor_excess_ms = 0;
  int64_t collectives = 0;
  int64_t longest_program = 0;    // instructions of the longest rank program
  ReducePolicy policy = ReducePolicy::NONE;
};

// Relative tolerance of the self-consistent floor: replay's expected floored transfer at most 1 %
// above the simulator's (one tenth of the 10 % agreement goal; fixed a priori, not fitted).
inline constexpr double kFloorTolerance = 0.01;

// The least m >= 0 with E[(X − m)+] <= tolerance · m over the sample `x` (ms), i.e.
// E[max(X, m)] <= (1 + tolerance) · m. Replay ends a transfer at max(real, matched + model), so
// with the model at m its expected transfer is E[max(X, m)] = m + E[(X − m)+]; the exact fixed
// point m = E[max(X, m)] holds only for m >= max X (every m below has E[(X − m)+] > 0), and a
// sample maximum is one stall; the tolerance makes it the least m whose residual is that share
// of m (unique: E[(X − m)+] − tolerance · m strictly decreases). tolerance 0 gives max(x).
// Negative times (clock offsets) count as 0, which leaves E[(X − m)+] unchanged for m >= 0.
// 0 for an empty sample. docs/replay.md, "The self-consistent floor". O(n log n).
double self_consistent_floor(std::vector<double> x, double tolerance);

// The figures of `run` (a measured step of the expanded set `set`); `transfers` gives each
// transfer's matched → end time (replay::MeasuredCost: batch_ms for a BATCH, collective_ms for a
// collective). Programs without instructions are skipped. Pure: no MPI.
RuntimeOverhead overhead_of(const ProgramSet& set, const EngineResult& run, const CostModel& transfers);

// Every world rank calls this (collective over MPI_COMM_WORLD, whose size must be the config's
// world): replays `steps` steps of the config's policy with the communication model zeroed and
// returns overhead_of() of the median step on rank 0 (other ranks: policy only).
RuntimeOverhead runtime_overhead(const PipelineConfig& cfg, int me, int32_t steps);

}  // namespace ppstream::replay
