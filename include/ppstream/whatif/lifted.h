// A ppstream trace lifted into its programs (docs/whatif.md "Our traces: the stream-program
// path"): the trace's config compiled again (expanded: every DP rank, every pass) and verified,
// each slice joined to its instruction, and every instruction's measured cost per step. The what-if
// (analyze_ppstream_trace) and `tune --from-trace` (docs/tune.md "From a trace") both start here.
// Units: ms.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/engine/engine.h"
#include "ppstream/program/ir.h"

namespace ppstream::whatif {

// What one instruction cost in the trace. `ms`: compute = its duration; BATCH = its end minus the
// latest post of its own and its mirrors' batches (the transfer); UNSHARD / REDUCE_GRAD = its
// end minus the last member's arrival (the transfer). `arrival_ms`: a collective member's
// arrival delay after it posted (the trace's args.arrival_delay_ms; 0 elsewhere).
struct MeasuredCost {
  double ms = 0;
  double arrival_ms = 0;
};

// Measured costs by rank and instruction key (instr_key: program/format.h op_text, "B mb15 s7",
// no rank, no stream, with its occurrence in the program: "UNSHARD s0#1" is the second), so that
// a set compiled under another reduction policy finds the same instruction's cost.
using MeasuredTable = std::vector<std::unordered_map<std::string, MeasuredCost>>;  // [rank]

struct LiftedTrace {
  std::string path;         // the file or directory read
  std::string config_path;  // T.json.config.yaml or DIR/replay.POLICY.config.yaml
  PipelineConfig config;    // loaded from config_path
  ProgramSet programs;      // compiled expanded from `config`, verified
  // The engine profile the programs are re-simulated under: ascend-mindspore, or for a train run
  // the runtime's own semantics — `cpu-mccl` (MCCL's eager sends) for a CPU run verified under
  // cpu-serial (docs/whatif.md "Train run directories"). `ran_as`: a train run's run.json
  // `verified_under`, the profile the programs were verified under (again here, too).
  PlatformKind platform = PlatformKind::ASCEND_MINDSPORE;
  std::optional<PlatformKind> ran_as;
  bool train_run = false;   // a `ppstream train` run directory (its programs.json checked)
  struct Step {
    int32_t step = 0;
    double measured_ms = 0;  // the step's length in the trace (docs/whatif.md "Steps")
    MeasuredTable table;     // by rank and instruction key
    std::vector<std::vector<MeasuredCost>> costs;  // [program][instr] of `programs` (0: not drawn, RECORD/WAIT)
    // A train run (host-serial: every call returns when its work is done): the host's gap before
    // each instruction, [program][instr] — its slice's start minus the end of the rank's previous
    // slice in program order (the first: minus the step's earliest start over the ranks, so it
    // holds the rank's own late start); 0 for RECORD / WAIT and undrawn compute. The launch
    // delays of this path (docs/whatif.md); empty for other traces.
    std::vector<std::vector<double>> host_gap_ms;
    std::vector<double> rank_start_ms;  // [program]: the rank's step marker start on that origin
  };
  std::vector<Step> steps;  // in step order
  int64_t slices_read = 0;
  int64_t waits_skipped = 0;  // EVENT_WAIT slices (the engine derives the waits)
};

// Reads and lifts one ppstream trace (a `simulate --cluster --trace-every-rank --trace T.json`
// file with T.json.config.yaml beside it, or a `replay --trace DIR` directory), keeping only the
// steps in `steps` [first, last] when given. Throws LiftError naming the file: no config beside
// the trace, no step in the range, a trace not drawing every rank, a slice no instruction names,
// an instruction without its slice or P2P mirror (messages as analyze_ppstream_trace's).
LiftedTrace lift_ppstream_trace(const std::string& path,
                                const std::optional<std::pair<int32_t, int32_t>>& steps = std::nullopt);

// Step `k` (index into l.steps) re-simulated by the engine under `platform` with its measured
// costs and, for a train run, its launch delays (host_gap_ms as the engine's host issue time):
// per rank, its last instruction's end minus its own step start (rank_start_ms), the longest over
// ranks, as the runtime measures a step (docs/whatif.md "Train run directories"). For other
// traces (no host gaps): the engine's makespan. ms; throws LiftError if the set deadlocks.
double resimulated_step_ms(const LiftedTrace& l, size_t k, PlatformKind platform);

}  // namespace ppstream::whatif
