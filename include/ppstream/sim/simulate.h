// simulate: compile a configuration under one or both reduction policies, run the engine with
// the `ascend-mindspore` profile, the config's cost model and straggler model, and report the
// step's metrics (one pipeline replica, or every replica of the world in cluster mode), over
// one or more seeded straggler trials. The CLI (`ppstream simulate`) and Python call this.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/engine/engine.h"
#include "ppstream/sim/cost_model.h"
#include "ppstream/sim/memory.h"
#include "ppstream/sim/metrics.h"
#include "ppstream/sim/straggler.h"

namespace ppstream::sim {

// An output file (--trace, --svg) that cannot be written: what() is "simulate: cannot write PATH:
// REASON" (strerror); path() and error() (the errno) let Python raise OSError as open() does.
class WriteError : public std::runtime_error {
 public:
  WriteError(const std::string& what, std::string path, int error)
      : std::runtime_error(what), path_(std::move(path)), error_(error) {}
  const std::string& path() const { return path_; }
  int error() const { return error_; }

 private:
  std::string path_;
  int error_;
};

struct SimOptions {
  std::vector<ReducePolicy> policies;  // empty: the config's reduce_grad (inline | async)
  bool cluster = false;                // every DP replica (rank = pp_rank * dp + dp_index)
  // Engine profile: ascend-mindspore (what the runtime runs on Ascend), or a what-if such as
  // ascend-mindspore-one-comm-stream (multi_stream:true) or cpu-serial; strict is untimed and refused.
  PlatformKind platform = PlatformKind::ASCEND_MINDSPORE;
  int32_t trials = 1;                  // seeded straggler draws; metrics detail is trial 0
  int32_t threads = 0;                 // workers for trials 1..N-1 (0: one per hardware thread);
                                       //   results are identical for every count (sim/trials.h)
  std::optional<uint64_t> seed;        // overrides straggler.seed
  std::string trace_path;              // Chrome trace of trial 0 ("" = none); with several
  std::string svg_path;                //   policies: NAME.inline.json, NAME.async.json; one SVG
  // Beside each trace, TRACE.config.yaml: the configuration that ran (to_yaml, with the policy),
  // which `ppstream whatif TRACE` compiles again to lift the trace into programs.
  bool trace_every_rank = false;       // cluster mode: the trace draws every rank, not replica 0
  // Cluster mode: evaluate the replicas from replica 0's template tape (docs/simulate.md "Replica
  // vector"; same output) where it can express the run (dedicated links, no trace or SVG, no
  // named collectives); false: always the expanded world's engine run.
  bool replica_vector = true;
  // Files the run read (the CONFIG): an output that is one of them (same device and inode) is
  // refused before the run with std::invalid_argument, as it would be overwritten.
  std::vector<std::string> inputs;
  // Called with a line for stderr where cluster mode ran the expanded engine though replica_vector
  // asked for the vector, saying why ("simulate: note: reduce_grad inline: the expanded engine ran,
  // not the replica vector: cost.link_sharing is not dedicated …"); the CLI sets it when
  // --cluster-engine replica is given. The output is the same either way (docs/simulate.md).
  std::function<void(const std::string&)> note;
  // Called after each engine run (done, total): the CLI draws a progress bar with it.
  std::function<void(int64_t, int64_t, const std::string&)> progress;
};

struct TrialStats {
  std::vector<double> step_time_ms;  // one per trial, in trial order
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, mean_ms = 0;
};

struct PolicyRun {
  ReducePolicy policy = ReducePolicy::NONE;
  SimMetrics metrics;                  // trial 0
  TrialStats trials;
  int64_t engine_events = 0;           // trial 0
  double engine_wall_ms = 0;           // trial 0, wall-clock time of run_engine
  size_t programs = 0;
  size_t instructions = 0;
  MemoryReport memory;                 // trial 0 (with curves when an SVG is drawn)
  double peak_memory_bytes = 0;        // max over ranks and every trial (memory.h); cluster: replica 0, trial 0
};

struct SimReport {
  World world;
  DPMode mode = DPMode::NONE;
  CostSpec cost;
  MemorySpec memory;                   // the memory model's sizes (cost: keys, memory.h)
  uint64_t seed = 0;
  bool cluster = false;
  PlatformKind platform = PlatformKind::ASCEND_MINDSPORE;
  std::vector<PolicyRun> runs;
};

// Throws ConfigError (bad cost/straggler sections, policy without DP) and std::invalid_argument
// (a deadlocked step, which names every blocked instruction).
SimReport simulate(const PipelineConfig& cfg, const SimOptions& opts);

// Nearest-rank percentile (q in [0, 100]) of a non-empty sample.
double percentile(std::vector<double> sample, double q);
// Fills p50/p90/p99 (percentile) and the mean of trials.step_time_ms (non-empty).
void summarize(TrialStats& trials);

// JSON: {"format":"ppstream.sim/1", "world":…, "policies":{"inline":{metrics…}, "async":{…}},
// "comparison":{…} (two policies)}. Cluster mode lists per-rank detail for replica 0 and a
// per-PP-rank summary of every replica.
std::string report_json(const SimReport& report, int indent = 2);
// Human-readable summary; with two policies a side-by-side table, legacy vs async.
std::string report_table(const SimReport& report);

// For Python (bound in src/python/module.cpp): runs `simulate` and returns report_json.
// reduce_grad: "inline" | "async" | "both" | "" (the config's); platform: a profile name
// (parse_platform). Writes trace/SVG when paths are non-empty; throws WriteError if it cannot, and
// std::invalid_argument (before the run) if one is among `inputs` (SimOptions::inputs).
// trace_every_rank: SimOptions::trace_every_rank (Python's trace_every_rank=); cluster_engine:
// "replica" | "expanded" (SimOptions::replica_vector) or "" (not given: replica); threads:
// SimOptions::threads. trace_every_rank or a cluster_engine without `cluster`: check_cluster_only.
std::string simulate_json(const PipelineConfig& cfg, const std::string& reduce_grad = "", bool cluster = false,
                          int32_t trials = 1, std::optional<uint64_t> seed = std::nullopt,
                          const std::string& trace_path = "", const std::string& svg_path = "",
                          const std::string& platform = "ascend-mindspore", const std::vector<std::string>& inputs = {},
                          bool trace_every_rank = false, const std::string& cluster_engine = "",
                          int32_t threads = 0);

// The options that mean something in cluster mode only, given without it (the CLI's --cluster-engine
// and --trace-every-rank, Python's cluster_engine= and trace_every_rank=): std::invalid_argument
// naming the option ("simulate --cluster-engine expanded: only with --cluster"), not an option
// silently ignored. `cluster_engine` empty: not given.
void check_cluster_only(bool cluster, bool trace_every_rank, const std::string& cluster_engine);

// "inline" → {INLINE}, "async" → {ASYNC}, "both" → {INLINE, ASYNC}; throws std::invalid_argument.
std::vector<ReducePolicy> parse_policies(const std::string& text);

}  // namespace ppstream::sim
