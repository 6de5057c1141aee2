// From replay's measured per-instruction timings to the simulator's metrics and report: the
// measured step becomes an EngineResult, and a MeasuredCost tells the metrics code how long
// each transfer took once matched (BATCH: end − the later of its post and its mirrors' posts;
// collective: end − the last member's arrival), so compute_metrics() defines every measured
// figure exactly as it defines the simulated one (docs/replay.md, "Metrics").
#pragma once

#include <string>
#include <vector>

#include "ppstream/engine/engine.h"
#include "ppstream/sim/cost_model.h"
#include "ppstream/sim/simulate.h"

namespace ppstream::replay {

class MeasuredCost : public CostModel {
 public:
  // `timing` is the measured run; `model` gives the straggler arrival delays.
  MeasuredCost(const ProgramSet& set, const EngineResult& run, const sim::SimCostModel& model);
  double compute_ms(const Program& p, const Instr& i) const override;
  double batch_ms(const Program& p, const Instr& i) const override;
  double collective_ms(const Program& p, const Instr& i) const override;

 private:
  double lookup(const Program& p, const Instr& i) const;
  const ProgramSet& set_;
  std::vector<std::vector<double>> transfer_ms_;  // [program][instr]
};

// The measured step as an EngineResult (makespan = last end).
EngineResult measured_run(const ProgramSet& set, std::vector<std::vector<InstrTiming>> timing);

// The measured run of one policy in simulate's PolicyRun shape (metrics of the step `run`,
// trials = every measured step's time).
sim::PolicyRun measured_policy_run(const ProgramSet& set, ReducePolicy policy, const EngineResult& run,
                                   const sim::SimCostModel& model, const std::vector<double>& step_times_ms);

// JSON: simulate --json's document for the measured figures, with "simulated" (simulate
// --cluster --json for the same config and policies) and "replay" (settings, ratios) beside.
std::string replay_json(const sim::SimReport& measured, const sim::SimReport& simulated, const std::string& settings_json);
// Table: measured vs simulated with their ratio, per policy; then the measured report table.
std::string replay_table(const sim::SimReport& measured, const sim::SimReport& simulated);

}  // namespace ppstream::replay
