// SimCostModel: the simulator's durations for the engine (compute per virtual stage, P2P as
// latency + bytes / bandwidth, HSDP collectives with the alpha–beta ring model) plus the
// straggler model's arrival delays. Read from the config's `cost:` section; units are in the
// key names (ms, bytes, GB/s with GB = 1e9 bytes). See docs/simulate.md.
//
//   cost:
//     forward_ms_per_layer: 4.0        # F time of one layer for one microbatch
//     backward_ms_per_layer: 8.0       # B time of one layer (dx + parameter grads)
//     backward_input_fraction: 0.5     # split backward: I (dX) = fraction · B, W (dW) = the rest
//                                      # (0.5: T_B = T_W as Qi et al., "Zero Bubble Pipeline
//                                      # Parallelism", ICLR 2024, §2 assume; their profiles ~0.5)
//     stage_forward_ms: [..]           # optional: per virtual stage, overrides the per-layer time
//     stage_backward_ms: [..]
//     moe_dispatch_ms_per_layer: 0.0   # MoE all-to-all dispatch, added to F and to B per layer
//     moe_combine_ms_per_layer: 0.0    # MoE all-to-all combine, likewise
//     optimizer_ms: 0.0                # OPT_STEP
//     p2p_latency_ms: 0.02             # per BATCH
//     p2p_bandwidth_gb_per_s: 17.5     # per direction
//     activation_bytes: 8388608        # one activation (or its gradient) per P2P op
//     grad_bytes_per_layer: 0          # gradient bytes one rank reduces per layer
//     param_bytes_per_layer: 0         # unsharded parameter bytes per layer (UNSHARD all-gather)
//     collective_alpha_ms: 0.01        # per ring step latency
//     shard_bandwidth_gb_per_s: 50     # ring bandwidth inside a shard group
//     replicate_bandwidth_gb_per_s: 25 # ring bandwidth inside a replicate group
//     link_sharing: dedicated          # dedicated | fair | p2p_priority | reduce_priority
//     host_issue_ms: 0.0               # host time to issue one instruction (every kind), ms
//     stash_bytes_per_layer: …         # the memory model's sizes (sim/memory.h; defaults from the
//     dw_stash_fraction: 0.5           #   keys above): activation stash, W's part of it, unsharded
//     unsharded_param_bytes_per_layer  #   parameters, gradient buffer, receive buffer
//     grad_buffer_bytes_per_layer, recv_buffer_bytes
//
// Collective formulas (ring algorithms; Thakur, Rabenseifner, Gropp, "Optimization of Collective
// Communication Operations in MPICH", IJHPCA 19(1), 2005; Patarasuk, Yuan, "Bandwidth optimal
// all-reduce algorithms for clusters of workstations", JPDC 69(2), 2009), n ranks, N bytes:
//   reduce-scatter, all-gather:  (n-1)·alpha + (n-1)/n · N/beta
//   all-reduce:                  2(n-1)·alpha + 2(n-1)/n · N/beta
// REDUCE_GRAD(s) = reduce-scatter of G in the shard group, then all-reduce of G/shard in the
// replicate group (G = layers(s) · grad_bytes_per_layer); UNSHARD(s) = all-gather of P in the
// shard group. Reduction arithmetic is not modelled.
// Buckets (data_parallel.reduce_buckets; program/ir.h Bucket): a piece `B|W … bucket<j>/k` takes
// bucket_share(j/k, layers(s)) of the stage's B or W time; `REDUCE_GRAD s bucket<j>/k` is the two
// rings over that bucket's gradient bytes (bucket_layers(j/k).size() · grad_bytes_per_layer),
// so k buckets pay k times the alpha terms of one. The straggler model's delay of a stage's
// reduction is drawn once, for its first bucket (j = 0); later buckets arrive on time (they
// queue behind bucket 0 on the same stream and communicators anyway).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/engine/engine.h"
#include "ppstream/sim/straggler.h"

namespace ppstream::sim {

// How P2P and reduction traffic share a rank's link (see docs/simulate.md, "link sharing").
enum class LinkSharing : uint8_t { DEDICATED, FAIR, P2P_PRIORITY, REDUCE_PRIORITY };
const char* to_string(LinkSharing s);

struct CostSpec {
  double forward_ms_per_layer = 1.0;
  double backward_ms_per_layer = 2.0;
  double backward_input_fraction = 0.5;  // I = fraction · B, W = (1 - fraction) · B
  std::vector<double> stage_forward_ms;   // empty, or one per virtual stage
  std::vector<double> stage_backward_ms;
  double moe_dispatch_ms_per_layer = 0.0;
  double moe_combine_ms_per_layer = 0.0;
  double optimizer_ms = 0.0;
  double p2p_latency_ms = 0.0;
  double p2p_bandwidth_gb_per_s = 0.0;  // 0: P2P transfer is free (latency only)
  double activation_bytes = 0.0;
  double grad_bytes_per_layer = 0.0;
  double param_bytes_per_layer = 0.0;
  double collective_alpha_ms = 0.0;
  double shard_bandwidth_gb_per_s = 0.0;      // 0: bandwidth term is free
  double replicate_bandwidth_gb_per_s = 0.0;
  LinkSharing link_sharing = LinkSharing::DEDICATED;
  // Host time to issue one instruction of any kind (CostModel::host_issue_ms): PyNative's per-op
  // host launch cost on Ascend, replay's per-instruction runtime cost (`replay --calibrate`).
  double host_issue_ms = 0.0;
};

// A cost figure (a stage's forward, backward, reduction or gather time, a P2P batch time, the
// step time) that overflows a double although every key is finite: `keys` are the cost keys
// ("cost.collective_alpha_ms") whose values make it overflow, named in what() with their values.
// The CLI adds where each key was set (the CONFIG file or --set).
struct CostOverflow : std::invalid_argument {
  CostOverflow(const std::string& what, std::vector<std::string> keys_)
      : std::invalid_argument(what), keys(std::move(keys_)) {}
  std::vector<std::string> keys;
};

// The model's largest per-stage or per-batch figure and the cost key of its largest term: what a
// step-time overflow (a sum of finite figures) is reported with.
struct LargestFigure {
  std::string what;  // "the backward time of stage s1"
  double ms = 0;
  std::string key;   // "cost.backward_ms_per_layer"
  double value = 0;  // the key's value
};

// Parses the `cost:` section text; `num_stages` checks the per-stage lists. Throws ConfigError.
CostSpec parse_cost_spec(const std::string& yaml_text, int32_t num_stages);

// SimCostModel's constructor throws CostOverflow when one of its per-stage or per-batch figures
// is not finite.
// Ring collective times (ms) for n ranks and `bytes` bytes; 0 when n <= 1.
double ring_reduce_scatter_ms(int32_t n, double bytes, double alpha_ms, double bandwidth_gb_per_s);
double ring_all_gather_ms(int32_t n, double bytes, double alpha_ms, double bandwidth_gb_per_s);
double ring_all_reduce_ms(int32_t n, double bytes, double alpha_ms, double bandwidth_gb_per_s);

class SimCostModel : public CostModel {
 public:
  // `set` must outlive the model (the engine passes references into it). `stage_layers`
  // gives each virtual stage's layer count (PipelineConfig::stage_layers).
  SimCostModel(const ProgramSet& set, const PipelineConfig& cfg, CostSpec cost, StragglerModel straggler);

  double compute_ms(const Program& p, const Instr& i) const override;
  double batch_ms(const Program& p, const Instr& i) const override;
  double collective_ms(const Program& p, const Instr& i) const override;
  double arrival_delay_ms(const Program& p, const Instr& i) const override;
  double external_arrival_ms(const Program& p, const Instr& i) const override;
  double host_issue_ms(const Program& /*p*/, const Instr& /*i*/) const override { return cost_.host_issue_ms; }

  // The same model for another straggler draw: copies the per-stage figures, shares the
  // per-BATCH table (a read-only row per instruction, built once per set and cost section) and
  // recomputes only what depends on the draw (the outside members of a one-replica set). What
  // the trial runner builds per trial instead of a new model (O(stages), not O(instructions)).
  SimCostModel with_straggler(StragglerModel straggler) const;

  // Link sharing: extra transfer time per instruction ([program index][instr index]), set by the
  // simulator from a first run's overlaps; empty means none.
  void set_extra_ms(std::vector<std::vector<double>> extra) { extra_ms_ = std::move(extra); }
  // Transfer time of a BATCH without link sharing (used to tell matching from transfer).
  double base_batch_ms(const Instr& i) const;
  double base_collective_ms(const Instr& i) const;
  const CostSpec& spec() const { return cost_; }
  const StragglerModel& straggler() const { return straggler_; }
  const LargestFigure& largest_figure() const { return largest_; }

 private:
  double extra(const Program& p, const Instr& i) const;
  // The entry of [program index][instr index] table for (p, i) when p is a program of the set
  // and the table has its row, else nullptr.
  const double* row_of(const std::vector<std::vector<double>>& table, const Program& p, const Instr& i) const;
  void check_stage(int32_t s, double layers);  // CostOverflow naming the keys; updates largest_
  int32_t global_rank(const Program& p) const;
  void compute_outside();  // outside_*_ms_ from straggler_ (one-replica sets)
  double share(const Instr& i) const;  // bucket_share of a piece; 1 for a whole op

  const ProgramSet* set_;
  CostSpec cost_;
  StragglerModel straggler_;
  std::vector<double> fwd_ms_, bwd_ms_, reduce_ms_, unshard_ms_;  // per virtual stage
  std::vector<int32_t> layers_;                                    // per virtual stage
  // One-replica sets: slowest outside member per [pp_rank][stage] for each collective kind.
  std::vector<std::vector<double>> outside_reduce_ms_, outside_unshard_ms_;
  std::vector<std::vector<double>> extra_ms_;
  // The durations of the set's instructions, compactly: per instruction (flat index base[p] +
  // index) a code into `ms`, the distinct values (code 0 is 0 ms) — compute_ms of F/B/I/W/
  // OPT_STEP or base_batch_ms of a BATCH, `batch` telling which. The engine asks in time order
  // across ranks, where each Instr read is a cache miss on a large set; the code is 2 bytes per
  // instruction (the per-BATCH double table it replaces was 8). Built once per set and cost
  // section and shared by every with_straggler copy; null when the set has over 65,535
  // distinct durations (then every call computes its formula).
  struct Durations {
    std::vector<size_t> base;    // per program, size programs+1
    std::vector<uint16_t> code;  // per instruction
    std::vector<double> ms;      // per code
    std::vector<char> batch;     // per code: a BATCH's time (compute_ms of it is 0)
  };
  std::shared_ptr<const Durations> durations_;
  double compute_formula_ms(const Instr& i) const;
  std::shared_ptr<const Durations> durations_table(const ProgramSet& set) const;
  // The set's flat index of (p, i), or SIZE_MAX when there is no table or (p, i) is not an
  // instruction of the set.
  size_t flat_index(const Program& p, const Instr& i) const;
  LargestFigure largest_;
};

}  // namespace ppstream::sim
