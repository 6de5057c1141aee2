// A timer trace as a table of the per-step template: the ops one DP rank runs in one step
// (per stage), and their measured times on every (step, DP rank) row.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "op_types.h"
#include "ppstream/analyze/megatron.h"

namespace ppstream::whatif {

struct TemplateOp {
  int32_t stage = 0;
  OpType type = OpType::FWD;
  int32_t seq = 0;    // args.seq_id: the op's rank among ops of its type on its worker in the step
  int32_t chunk = -1;  // args.model_chunk (-1: none)
  int32_t mb = -1;
};

struct Job {
  int32_t dp = 0, pp = 0, vpp = 1;
  std::vector<int32_t> steps;   // step ids, ascending; row r = step_index · dp + dp_rank
  std::vector<TemplateOp> ops;  // the template, sorted by (stage, type, seq)
  std::vector<double> start_ms, dur_ms;  // [op · rows + row]: start from the step's first op
  std::vector<double> measured_step_ms;  // per step: last end − first start
  int64_t trace_ops = 0;
  std::vector<std::string> notes;
  int64_t rows() const { return static_cast<int64_t>(steps.size()) * dp; }
  size_t at(int32_t k, int64_t row) const { return static_cast<size_t>(k * rows() + row); }
  std::string where(int32_t k, int64_t row) const;  // "DP rank d, stage p, step s, forward-compute #3"
};

// Builds the table; the template is DP rank 0's ops in the first step, and every other
// (step, DP rank) must hold the same ops. Throws LiftError naming the row and op otherwise.
Job build_job(const analyze::TimerTrace& trace, std::optional<std::pair<int32_t, int32_t>> steps);

}  // namespace ppstream::whatif
