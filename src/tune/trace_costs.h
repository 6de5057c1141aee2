// `tune --from-trace` (docs/tune.md "From a trace"): a plan's instruction costs taken from the
// measured job instead of the `cost:` section's formulas, and its tails from the job's observed
// arrival delays. What a recompiled plan's instruction maps to in the measured job (the first
// rule that applies):
//   1. measured on its rank: compute F / B / I / W / RESHARD / OPT_STEP by (rank, kind, virtual
//      stage), the mean over the microbatches and steps measured (microbatch-agnostic: a schedule
//      reorders microbatches); BATCH by (rank, width = max(sends, receives), as the simulator's
//      cost), the mean measured transfer; UNSHARD / REDUCE_GRAD by (rank, kind, stage), the mean
//      measured transfer (end − last arrival);
//   2. derived on its rank (counted): I = f·B and W = (1 − f)·B from a measured B (f: the
//      config's cost.backward_input_fraction), B = I + W; a BATCH width the rank never had: the
//      nearest measured width's mean × the config model's ratio of the two widths' times;
//   3. derived from the other ranks (counted): the same (kind, stage) — or its split / join as
//      in 2 — measured on the ranks that ran that stage (a schedule that places stages otherwise,
//      zbv, dualpipev): their mean;
//   4. never measured (counted per op kind, never silent): the config's cost model (SimCostModel).
// Arrival delays (the tails): a collective's (rank, kind, stage, occurrence k) in the step the
// trial drew for that rank, the k-th measured occurrence (past the last, the last); a collective
// the rank never had (counted as "KIND arrival"): the config's straggler model. Units: ms.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ppstream/engine/engine.h"
#include "ppstream/sim/trials.h"
#include "ppstream/whatif/lifted.h"

namespace ppstream::tune_detail {

// What a cost is keyed by on a rank (see above): width only for BATCH, stage -1 for BATCH.
struct CostKey {
  OpKind op = OpKind::F;
  int32_t stage = -1;
  int32_t width = 0;
  auto operator<=>(const CostKey&) const = default;
};
CostKey cost_key(const Instr& i);

struct Mean {
  double sum = 0;
  int64_t n = 0;
  void add(double x) { sum += x, ++n; }
  double value() const { return n ? sum / static_cast<double>(n) : 0.0; }
};

// The measured job: costs pooled over every step of every trace, arrival delays per step.
struct TraceStats {
  World world;                                   // the traces' (expanded) world
  std::vector<std::map<CostKey, Mean>> cost;     // [global rank]
  std::map<CostKey, Mean> all_ranks;             // the same pooled over every rank
  using Arrivals = std::map<std::pair<OpKind, int32_t>, std::vector<double>>;  // (op, stage) → by occurrence
  std::vector<std::vector<Arrivals>> arrival;    // [step][global rank]
  int32_t steps() const { return static_cast<int32_t>(arrival.size()); }
};

// Adds every step of `t` (its programs and measured costs) to `s`. Throws whatif::LiftError when
// `t`'s world differs from the world already in `s`.
void add_lifted(TraceStats& s, const whatif::LiftedTrace& t);

// Per op kind name ("I", "BATCH", …): instructions of one plan by where their cost came from.
struct CostOrigins {
  int64_t measured = 0;
  std::map<std::string, int64_t> derived;     // rules 2 and 3 of the mapping above
  std::map<std::string, int64_t> unmeasured;  // rule 4: the config's model ("KIND arrival": its straggler model)
};

// One plan's costs from the trace: a base duration per instruction and, per trial, the arrival
// delays (the trial's draw of a measured step per rank: trial_steps).
class PlanTraceCosts {
 public:
  // `plan` must be compiled expanded over the traces' world (sim::CompiledPlan with cluster).
  PlanTraceCosts(const sim::CompiledPlan& plan, const sim::TrialSetup& setup, const TraceStats& stats);
  const CostOrigins& origins() const { return origins_; }
  // Arrival delay per [program][instr] in `trial`: the step drawn for each rank by `steps_of_rank`.
  std::vector<std::vector<double>> arrivals(const std::vector<int32_t>& steps_of_rank, uint64_t trial) const;
  const std::vector<std::vector<double>>& base_ms() const { return ms_; }

 private:
  const sim::CompiledPlan* plan_;
  const sim::TrialSetup* setup_;
  const TraceStats* stats_;
  std::vector<std::vector<double>> ms_;
  struct Coll {
    size_t prog = 0, instr = 0;
    int32_t rank = 0, occurrence = 0;
    std::pair<OpKind, int32_t> key;
  };
  std::vector<Coll> colls_;
  CostOrigins origins_;
};

// Trial `trial`'s step per global rank: uniform over the measured steps, from a generator seeded
// with (seed, trial) alone, so every plan draws the same steps (common random numbers).
std::vector<int32_t> trial_steps(uint64_t seed, uint64_t trial, int32_t ranks, int32_t steps);

// The engine's durations for one trial: base costs and that trial's arrival delays; host issue
// time from the config's cost section (a trace does not measure it).
class TraceCostModel : public CostModel {
 public:
  TraceCostModel(const ProgramSet& set, const std::vector<std::vector<double>>& ms, std::vector<std::vector<double>> arrival,
                 double host_issue_ms);
  double compute_ms(const Program& p, const Instr& i) const override { return at(*ms_, p, i); }
  double batch_ms(const Program& p, const Instr& i) const override { return at(*ms_, p, i); }
  double collective_ms(const Program& p, const Instr& i) const override { return at(*ms_, p, i); }
  double arrival_delay_ms(const Program& p, const Instr& i) const override { return at(arrival_, p, i); }
  double host_issue_ms(const Program&, const Instr&) const override { return host_issue_ms_; }

 private:
  double at(const std::vector<std::vector<double>>& t, const Program& p, const Instr& i) const;
  const ProgramSet* set_;
  const std::vector<std::vector<double>>* ms_;  // outlives the model (the plan's PlanTraceCosts)
  std::vector<std::vector<double>> arrival_;
  double host_issue_ms_ = 0;
};

}  // namespace ppstream::tune_detail
