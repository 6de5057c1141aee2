// Lowering: compute order → per-rank stream programs, as a chain of passes
// (each a function ProgramSet → ProgramSet in its own file), verified after every pass.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/program/ir.h"
#include "ppstream/schedule/schedule.h"

namespace ppstream {

struct Pass {
  std::string name;  // "insert-p2p", "batch-p2p", "fsdp-unshard", "place-reductions", ...
  std::function<ProgramSet(ProgramSet, const PipelineConfig&)> run;  // input by value: moved along
};

// The pass list for a configuration, in order (printable with `ppstream compile --passes`).
std::vector<Pass> lowering_pipeline(const PipelineConfig& cfg);

struct LowerOptions {
  bool expanded = false;       // build every DP rank (rank = pp_rank*dp + dp_index)
  bool verify_each_pass = true;
  std::function<void(const std::string& pass, const ProgramSet&)> dump;  // after each pass
};

// Compiles cfg to programs. Throws ConfigError for bad configs and std::logic_error naming the
// pass and the violations if a pass breaks the IR.
ProgramSet compile(const PipelineConfig& cfg, const LowerOptions& opts = {});

}  // namespace ppstream
