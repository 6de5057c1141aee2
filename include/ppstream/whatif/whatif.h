// What-if analysis of a real job's timer trace (docs/whatif.md): lift the trace into a dependency
// graph per step, re-simulate it with its measured costs, then with idealized ones, and attribute
// the slowdown to DP ranks, stages and op types — the method and figures of "Understanding
// Stragglers in Large Model Training Using What-if Analysis" (Lin et al., OSDI 2025): S is its
// Eq. 1, S_t (by op type) Eq. 2, S_w (by worker) Eq. 4, M_W Eq. 5, M_S §5.2. Times in ms.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppstream/analyze/megatron.h"
#include "ppstream/program/ir.h"

namespace ppstream::whatif {

// A trace the lifting cannot use (a missing peer, an unmatched collective, a worker or step with
// other ops than the rest). The message names DP rank, stage, step and op, and what is missing.
struct LiftError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// How the ideal replaces measured durations. MEAN: compute ops by their mean, communication
// ops by their median (the artifact's rule, analysis_util.py); MEDIAN: every op by its median.
enum class Agg : uint8_t { MEAN, MEDIAN };

enum class Evaluator : uint8_t { ENGINE, GRAPH };

struct WhatIfOptions {
  std::optional<std::pair<int32_t, int32_t>> steps;  // analyse only steps in [first, last]
  Agg agg = Agg::MEAN;
  // Attribute (by DP rank, stage, op type) only when S >= this (the artifact's --decompose-thres).
  double decompose_threshold = 1.03;
  // Counterfactual: re-place the gradient reductions (INLINE or ASYNC, docs/whatif.md
  // "Counterfactual") and predict the step; nullopt / NONE: none.
  std::optional<ReducePolicy> reduce_grad;
  // Called after each simulation with (done, total); may be empty.
  std::function<void(int64_t, int64_t)> progress;
  // Megatron timelines: what computes the figures (docs/whatif.md "Evaluation on the engine").
  // ENGINE: the engine (`strict-timed`) on the lifted, verified stream programs, DP-rank
  // attribution on the reduced world of two DP rows, the default (one execution semantics; its
  // batched tape replay is within 1.2x of the graph's CPU, docs/whatif.md "Benchmark"); GRAPH:
  // the graph evaluator (sim_graph.h), the cross-check. The two give the same figures but the
  // re-simulation with launch delays (check_programs; docs/whatif.md "Negative costs"). Throws
  // VerifyError when the lifted programs do not verify (on either evaluator).
  Evaluator evaluator = Evaluator::ENGINE;
  // Megatron timelines: also run the other evaluator beside every evaluation (with launch
  // delays too) and report the largest difference in WhatIfResult::programs_check.
  bool check_programs = false;
};

// What check_programs found: the lifted set's size (the full world), the engine runs, and the
// largest |engine step - graph step| over every evaluation (ms).
struct ProgramsCheck {
  int64_t programs = 0, instructions = 0;
  int64_t runs = 0;            // engine runs (one per step and cost view)
  double max_diff_ms = 0;
};

// One step's times (ms from the step's first op).
struct StepFigures {
  int32_t step = 0;
  double measured_ms = 0;     // the trace: last end − first start
  double resimulated_ms = 0;  // lifted graph, measured costs and launch delays (should equal measured)
  double nodelay_ms = 0;      // measured costs, launch delays removed
  double ideal_ms = 0;        // idealized costs, no launch delays
  double slowdown = 0;        // nodelay / ideal
};

// The attribution of one group (keep its ops measured, the rest ideal; Eq. 2 / Eq. 4).
using Attribution = std::map<std::string, double>;  // label → slowdown (DP ranks, stages as integers)

struct WhatIfResult {
  int32_t dp = 0, pp = 0, vpp = 0;
  std::optional<ProgramsCheck> programs_check;  // WhatIfOptions::check_programs
  // The lifted programs every figure is computed on, as verified before any of them (docs/whatif.md
  // "Verification"): ranks and instructions of one step's set (the full world: every DP rank),
  // and the engine profiles the verifier proved them under (deadlock and the static rules).
  struct LiftedPrograms {
    int64_t programs = 0, instructions = 0;
    std::vector<std::string> verified_under;  // profile names (to_string(PlatformKind)): "strict", …
  };
  LiftedPrograms lifted;
  // Megatron timelines: ops = timer ops read and lifted (every step and DP rank), graph_ops = ops
  // of the per-step dependency template (all stages, one DP rank). A ppstream trace
  // (ppstream_trace true): ops = work slices read (every step and rank; EVENT_WAIT slices not
  // counted), graph_ops = instructions of one DP replica's programs (all PP ranks, RECORD / WAIT
  // included).
  int64_t ops = 0;
  int64_t graph_ops = 0;
  bool ppstream_trace = false;
  double slowdown = 0;         // S = mean nodelay / mean ideal (artifact: blocking_slowdown)
  double launch_slowdown = 0;  // mean measured / mean nodelay (artifact: launch_slowdown)
  double max_resim_error = 0;  // max over steps of |resimulated − measured| / measured
  double launch_delay_share = 0;  // 1 − mean nodelay / mean measured: the step share launch delays cost
  bool attributed = false;     // S >= decompose_threshold: the maps below are filled
  Attribution by_dp_rank, by_stage, by_op_type;
  // ppstream traces only: "d,p" (DP index, PP rank) → the slowdown that worker alone causes (S_w).
  Attribution by_worker;
  std::map<int32_t, Attribution> by_dp_rank_per_step, by_stage_per_step, by_op_type_per_step;
  // M_W (Eq. 5): share of the slowdown removed by idealizing the top 3 % of workers (by
  // min(S_dp, S_stage)); M_S: by idealizing the last stage. Each with its `add` counterpart.
  // nullopt when not computed: S below the attribution threshold (attributed false), or no
  // slowdown to share (nodelay == ideal).
  std::optional<double> m_w, m_w_add, m_s, m_s_add;
  std::vector<std::pair<int32_t, int32_t>> m_w_workers;  // (dp rank, stage) idealized for M_W
  // Worker heatmap: min(S_dp, S_stage) per [dp][stage] (the artifact's heatmap score).
  std::vector<std::vector<double>> worker_score;
  std::vector<StepFigures> steps;
  // With WhatIfOptions::reduce_grad: the step predicted with the reductions re-placed (means over
  // the steps, ms), with the measured costs and with the ideal ones, beside the measured-cost step
  // of the trace's own placement (nodelay) and the ideal one.
  struct Prediction {
    std::string policy;            // "inline" | "async"
    double measured_costs_ms = 0;  // re-placed, measured costs, no launch delays
    double ideal_costs_ms = 0;     // re-placed, ideal costs
    double traced_ms = 0;          // the trace's own placement, measured costs (mean nodelay)
    double traced_ideal_ms = 0;    // the trace's own placement, ideal costs
    std::vector<double> per_step_ms;  // re-placed, measured costs, per step
    std::string traced_policy;        // the trace's own: "async" (overlapped) | "after-backward" | a ppstream trace's
    int64_t instructions = 0;         // of the counterfactual programs (Megatron path; 0 elsewhere)
    // Megatron path: the dependency graph's own rewrite of rules 4-5 (lift.cpp Placement), beside
    // the pass's figures above (docs/whatif.md "Counterfactual": where and why they differ).
    std::optional<double> graph_ms, graph_ideal_ms;
  };
  std::optional<Prediction> predicted;
  std::vector<std::string> notes;  // assumptions, clamped values, ops outside the model
  // The ideal step (every DP rank's is the same): per op its stage, lane, name, start and end (ms).
  struct IdealSlice {
    int32_t stage = 0;
    std::string lane;  // "compute", "forward-send", …, "dp-comm": ops of one lane never overlap
    std::string name;
    double start_ms = 0, end_ms = 0;
  };
  std::vector<IdealSlice> ideal_timeline;
};

// Runs the analysis. Throws LiftError on a trace it cannot lift (message located as above).
WhatIfResult analyze(const analyze::TimerTrace& trace, const WhatIfOptions& opts = {});
// Reads every path (read_timer_trace) and analyses them as one job; one file given twice (the
// same canonical path) is an analyze::TraceError.
WhatIfResult analyze_paths(const std::vector<std::string>& paths, const WhatIfOptions& opts = {});

// ppstream's own traces (docs/whatif.md "Our traces").
// True when `path` is a JSON file whose top-level object's "otherData" object has the key
// "ppstream" (found by parsing: whitespace and key order do not matter; a file never mentioning
// "ppstream", a gzip file or a top-level array is never ours, without a full parse), a train run
// directory (run.json and programs.json), or a directory holding replay.*.json traces.
bool is_ppstream_trace(const std::string& path);
// The what-if's inputs sorted out (CLI and Python): the one ppstream trace among `paths`, or
// nullopt when they are Megatron timelines. Throws LiftError on a .parquet path (parquet tables
// are read from Python, ppstream.whatif, with pyarrow) and on a ppstream trace beside any other
// path ("one ppstream trace at a time"), and on a directory that is neither a train run directory
// nor a replay one ("not a run directory: no run.json").
std::optional<std::string> ppstream_trace_of(const std::vector<std::string>& paths);
// One `simulate --cluster --trace-every-rank --trace PATH` trace with PATH.config.yaml beside it,
// or a `replay --trace PATH` directory with PATH/replay.POLICY.config.yaml (one policy's files;
// steps by their markers): the config is compiled again (expanded, every pass) and verified, each
// slice joined to its instruction, and the engine re-run per step under MeasuredCostModel; ideal,
// attribution (by_dp_rank = DP index, by_stage = PP rank, by_op_type = OpKind name, by_worker;
// means over steps) and the --reduce-grad prediction are engine runs of verified sets. Times in
// ms. Launch delays are not lifted (the engine has no host issue cost). Throws LiftError (missing
// config, a slice no instruction names, an instruction without its slice or P2P mirror, a trace
// not drawing every rank, a slice outside every step marker).
WhatIfResult analyze_ppstream_trace(const std::string& path, const WhatIfOptions& opts = {});

// Report views.
std::string to_json(const WhatIfResult& r);   // keys in docs/whatif.md
std::string to_text(const WhatIfResult& r);   // the plain table: worst workers, stages, op types
std::string to_svg(const WhatIfResult& r);    // heatmap DP rank × stage of worker_score
std::string to_trace(const WhatIfResult& r);  // ideal timeline as Chrome/Perfetto JSON

}  // namespace ppstream::whatif
