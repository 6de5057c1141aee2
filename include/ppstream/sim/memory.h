// The memory model: what each rank holds over one simulated step, read off the engine's timeline
// of the step's programs (the same run that gives the step time; no second semantics). Bytes
// throughout; times in ms from step start. See docs/simulate.md "Memory".
//
// Buffers (each an interval [alloc, free) on its rank; stage s has L(s) layers):
//   activation stash of (mb, s)  L(s)·stash_bytes_per_layer, from the start of F(mb,s) to the end
//                                of B(mb,s); split backward: I(mb,s)'s end frees all but the
//                                fraction dw_stash_fraction (what W needs), W(mb,s)'s end the rest
//   unsharded parameters of s    L(s)·unsharded_param_bytes_per_layer, from the start of UNSHARD(s)
//                                to the end of RESHARD(s) (or the step end without a RESHARD)
//   gradient buffer of s         L(s)·grad_buffer_bytes_per_layer, from the start of the stage's
//                                first backward (B, I or W) to the end of its REDUCE_GRAD (async:
//                                the reduce_done that follows it on the reduction stream ends
//                                with it); without data parallelism, to the end of OPT_STEP; with
//                                gradient buckets each bucket's share (program/ir.h bucket_share)
//                                is freed at the end of that bucket's REDUCE_GRAD, and a piece of a
//                                bucketed backward frees its share of the stash at its end
//   receive buffer of a RECV op  recv_buffer_bytes, from the start of its BATCH to the end of the
//                                compute op that consumes it (F(mb,s) for RECV_F, B/I for RECV_B)
// At one instant frees come before allocations (a buffer freed at t and one allocated at t never
// overlap). Not modelled: sharded parameters, optimizer state, send buffers, framework
// workspace and fragmentation (docs/simulate.md lists them).
//
// The sizes are `cost:` keys; defaults derive from the cost model's keys:
//   stash_bytes_per_layer            activation_bytes (one boundary activation per layer)
//   dw_stash_fraction                0.5 (the half of the stash W reads; Qi et al., ZB, §2)
//   unsharded_param_bytes_per_layer  param_bytes_per_layer
//   grad_buffer_bytes_per_layer      grad_bytes_per_layer
//   recv_buffer_bytes                activation_bytes
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/engine/engine.h"
#include "ppstream/program/ir.h"
#include "ppstream/sim/cost_model.h"

namespace ppstream::sim {

struct MemorySpec {
  double stash_bytes_per_layer = 0;
  double dw_stash_fraction = 0.5;
  double unsharded_param_bytes_per_layer = 0;
  double grad_buffer_bytes_per_layer = 0;
  double recv_buffer_bytes = 0;
};

// The `cost:` keys of the memory model (the cost section's reader accepts them too).
const std::vector<std::string>& memory_cost_keys();
// Reads the memory keys of the `cost:` section text, defaults from `cost` (above). Throws
// ConfigError naming the key, line and value (negative sizes; a fraction outside [0, 1]).
MemorySpec parse_memory_spec(const std::string& cost_yaml, const CostSpec& cost);

// Bytes held by kind (at one instant).
struct MemoryBreakdown {
  double activations = 0, params = 0, grads = 0, recv = 0;
  double total() const { return activations + params + grads + recv; }
};
// One step of a rank's curve: from t_ms on, the rank holds `bytes` (until the next point).
struct MemoryPoint {
  double t_ms = 0;
  double bytes = 0;
};

struct RankMemory {
  Rank rank;
  int32_t pp_rank = 0;
  double peak_bytes = 0;          // max over the step of the bytes held
  double peak_ms = 0;             // the first instant the peak is reached
  MemoryBreakdown at_peak;        // what is held then
  int32_t peak_stashes = 0;       // activation stashes (microbatch × stage) held then, whole or W part
  std::vector<MemoryPoint> curve; // the step function, starting at (0, 0); empty unless asked
  bool computed = true;           // false: left out by the caller's filter (every figure 0)
};

struct MemoryReport {
  std::vector<RankMemory> ranks;  // every program, in set order
  double peak_bytes = 0;          // max over the ranks computed
  Rank peak_rank;                 // the first rank (set order) reaching it
};

// The memory of one completed run of `set` (its timings). `stage_layers`: L(s) per virtual stage
// (PipelineConfig::stage_layers). `curves`: keep each rank's step function (the SVG's lane).
// `only`: when set, the programs it rejects are listed with computed = false and not swept
// (simulate --cluster sweeps replica 0: every replica runs the same programs).
// Throws std::invalid_argument if the run did not complete or a stage has no layer count.
MemoryReport compute_memory(const ProgramSet& set, const EngineResult& run, const std::vector<LayerRange>& stage_layers,
                            const MemorySpec& spec, bool curves = false,
                            const std::function<bool(const Program&)>& only = {});

// "1.50 GiB", "12.0 MiB", "512 B": binary units for tables.
std::string format_bytes(double bytes);

}  // namespace ppstream::sim
