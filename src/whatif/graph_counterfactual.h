// The reduction-policy counterfactual of a Megatron timeline as the compiler's pass
// (docs/whatif.md "Counterfactual"): the lifted programs (graph_programs.h) with their gradient
// reduce-scatters stripped, then place-reductions (lower.h place_program_reductions) with
// `inline` or `async`, verified and run by the engine.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine_eval.h"
#include "graph_programs.h"
#include "job.h"
#include "ppstream/program/ir.h"
#include "ppstream/verify/verify.h"
#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {

// The trace's own reduction policy: ASYNC when the job overlaps its reduction (a
// separate-grads-all-reduce is traced: each chunk's reduce-scatter starts after the chunk's last
// backward, on the DP lane, and the chain after the last compute waits for it); nullopt when the
// reductions follow the last compute (Megatron without overlap_grad_reduce: neither inline nor
// async — the reduction neither blocks compute nor overlaps it).
std::optional<ReducePolicy> traced_policy(const Job& job);
const char* traced_policy_name(const Job& job);  // "async" | "after-backward"

// `traced` (programs_of_graph of the traced graph) with every grads-reduce-scatter COLLECTIVE
// (and the WAITs before it and the RECORD after it) stripped, every WAIT of another op on such a
// reduction removed, and place-reductions run on each program with `policy`: one REDUCE_GRAD per
// chunk (stage chunk · pp + p) after the chunk's last backward — inline on `compute`, or async on
// `reduce` after the batch sending the last backward's input gradient, drained (one WAIT per
// reduction) before the first instruction that waited on a stripped reduction (the chain after the
// last compute: clip, or layernorm when overlapped), or before OPT_STEP when none did. The set is
// mode hsdp with shard 1, replicate dp (a REDUCE_GRAD is then the all-reduce of the stage's DP
// ranks: the reduce-scatter's group, rank p · dp + d), policy `policy`; each REDUCE_GRAD maps
// (op_of) to its chunk's reduce-scatter, so GraphCostModel gives it that op's transfer time.
// Throws LiftError when a chunk has no reduce-scatter or more than one, or when two ops that
// waited on a reduction lie on different streams (one drain cannot stand for both). DP 1 (no
// reduction to re-place): `traced` unchanged, with a note.
GraphPrograms counterfactual_programs(const Job& job, const GraphPrograms& traced, ReducePolicy policy,
                                      std::vector<std::string>& notes);

// The prediction of `pr` from the counterfactual programs of `policy`: verified (strict, complete:
// send-before-reduce, reduce-once, drain, collective-order), then run by the engine on every step
// under `measured` (per_step_ms, measured_costs_ms: their mean) and once under `ideal`
// (ideal_costs_ms), on one engine topology (EngineWorld) shared by the verifier and every run.
// Sets pr.policy, pr.traced_policy and pr.instructions.
template <class Measured, class Ideal>
void predict_by_pass(const Job& job, const GraphPrograms& traced, ReducePolicy policy, int32_t steps,
                     const Measured& measured, const Ideal& ideal, WhatIfResult::Prediction& pr,
                     std::vector<std::string>& notes) {
  EngineWorld cf(counterfactual_programs(job, traced, policy, notes));
  cf.require_verified({}, std::string("whatif: the counterfactual programs (--reduce-grad ") + to_string(policy) + ")");
  pr.policy = to_string(policy);
  pr.traced_policy = traced_policy_name(job);
  pr.instructions = cf.gp.instructions();
  pr.per_step_ms = cf.steps_ms(measured, steps);
  double sum = 0;
  for (double x : pr.per_step_ms) sum += x;
  pr.measured_costs_ms = pr.per_step_ms.empty() ? 0.0 : sum / static_cast<double>(pr.per_step_ms.size());
  pr.ideal_costs_ms = cf.step_ms(ideal, 0);
}

}  // namespace ppstream::whatif
