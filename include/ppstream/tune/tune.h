// tune: search the plans a configuration can be compiled to (schedule, P2P flags, reduction
// placement and queue order, FSDP prefetch depth) for the lowest step-time objective under the
// config's straggler model, within a memory budget. Every plan is compiled and verified before
// it is scored; scoring is the simulator's trial runs (the one engine semantics) over seeded trials, the same
// trials for every plan (common random numbers), pruned by successive halving; a plan is compiled
// once and a later rung runs only the trials it adds (sim/trials.h). From a trace (TraceJob), the
// same search with every plan costed by a measured job and its tails the observed arrival delays
// (docs/tune.md "From a trace"). docs/tune.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ppstream/config/config.h"

namespace ppstream::tune_detail {
struct TraceStats;  // src/tune/trace_costs.h
}

namespace ppstream::tune {

enum class Objective : uint8_t { P99, P50, MEAN };
const char* to_string(Objective o);                               // "p99" | "p50" | "mean"
std::optional<Objective> parse_objective(const std::string& s);

// One axis of the plan space: a config key (as `--set` takes it) and the values to try.
struct Dimension {
  std::string key;
  std::vector<std::string> values;
};
using Settings = std::vector<std::pair<std::string, std::string>>;  // key=value, in space order

// The default space for `cfg`: the reduction policy and its knobs (when DP is on), the P2P
// flags and transport, the schedules of the config's family (vpp 1: gpipe, 1f1b, zb_h1; vpp > 1:
// interleaved_1f1b, interleaved_zb, and zbv / dualpipev at vpp 2) and, when sharded, the
// prefetch depth 1..vpp. Values that the config already has are included (so it is a plan).
std::vector<Dimension> default_space(const PipelineConfig& cfg);
// The keys a space may vary (docs/tune.md "The plan space"): how the same job runs, never what
// it is (model, batch, world sizes, layer split, costs, straggler model are not plan keys).
// `values`: the spellings accepted (an enumerated key); empty: an integer key >= min_int.
struct SpaceKey {
  std::string key;
  std::vector<std::string> values;
  int32_t min_int = 0;
};
const std::vector<SpaceKey>& plan_space_keys();
// Throws std::invalid_argument naming the key and value: a key not in plan_space_keys(), no or
// an empty value, a value given twice, a value not among the key's spellings, an integer below
// its minimum (max_active_stages: above the config's pipeline_parallel_interleave_num). A value
// that parses but that the config rules reject in combination is no error here: the search logs
// that plan `invalid: …`.
void check_dimension(const Dimension& d, const PipelineConfig& cfg);
// check_dimension on each axis, and a key given on two axes is an error (std::invalid_argument).
void check_space(const std::vector<Dimension>& space, const PipelineConfig& cfg);
// "KEY=V1,V2": one dimension, checked (check_dimension); throws std::invalid_argument naming the
// text and what is wrong (also no '=').
Dimension parse_dimension(const std::string& text, const PipelineConfig& cfg);

struct TuneOptions {
  Objective objective = Objective::P99;
  int32_t trials = 200;                        // trials of a fully evaluated plan (>= 1)
  std::optional<double> memory_budget_bytes;   // peak memory (any rank, any trial) limit
  std::vector<Dimension> space;                // empty: default_space; a key given here replaces its default
  std::optional<double> budget_s;              // wall-clock budget; stops with the best so far
  int32_t eta = 3;                             // successive halving: keep 1/eta per rung, trials × eta
  int32_t min_trials = 10;                     // trials of the first rung (at most `trials`)
  int32_t show = 5;                            // plans listed in the report
  // From a trace (tune(const TraceJob&, …)): the seed of each trial's draw of a measured step per
  // rank (docs/tune.md "From a trace"); the same seed gives the same trials for every plan.
  uint64_t trace_seed = 0;
  // Called after each plan evaluation: (evaluations done, evaluations planned so far, what).
  std::function<void(int64_t, int64_t, const std::string&)> progress;
};

// One scored plan.
struct PlanResult {
  Settings settings;              // the keys whose value differs from the config as written
  std::string label;              // "as written", "inline", … for baselines; else the settings
  int32_t trials = 0;             // trials its figures are over
  double p50_ms = 0, p99_ms = 0, mean_ms = 0;
  double score_ms = 0;            // the objective
  std::vector<double> step_time_ms;  // each trial's step time, trial 0 … trials−1 (the same draws for
                                     // every plan: a plan over fewer trials is compared with the
                                     // baselines' first `trials` of these)
  double peak_memory_bytes = 0;   // max over ranks and trials (sim/memory.h)
  std::vector<double> peak_per_rank_bytes;  // trial 0, per program (PP rank)
  bool over_budget = false;
  // From a trace: instructions (over every rank) whose cost the trace measured, derived from
  // measured ones (I/W from B, B from I + W), or took from the config's cost model, by op kind.
  int64_t measured_instructions = 0;
  std::map<std::string, int64_t> derived_instructions, unmeasured_instructions;
  std::string yaml;               // the plan as a config file (to_yaml): what --apply writes
};

// One line of the search log: a plan at a rung, or a plan set aside before scoring.
struct LogEntry {
  std::string plan;     // its settings as "key=v key=v" ("(as written)" when none)
  int32_t rung = -1;    // -1: not scored
  int32_t trials = 0;
  double score_ms = 0;
  std::string outcome;  // "kept", "pruned", "over budget", "invalid: …", "does not verify: …", "duplicate of …"
};

struct TuneReport {
  Objective objective = Objective::P99;
  // "config" (the cost: and straggler: sections) or "trace" (tune --from-trace: measured costs,
  // observed tails); from a trace, the traces read, their config file and measured steps.
  std::string cost_source = "config";
  std::vector<std::string> trace_paths;
  std::string trace_config_path;
  int32_t trace_steps = 0;
  uint64_t trace_seed = 0;
  int32_t trials = 0;
  std::optional<double> memory_budget_bytes;
  std::vector<Dimension> space;
  std::vector<PlanResult> plans;             // best first: fully evaluated (or the furthest rung when stopped), in budget
  PlanResult as_written;                     // the config, and the three policy baselines as written:
  std::vector<PlanResult> baselines;         //   inline; async (sync_last_reduce false); async + sync_last_reduce
  int64_t candidates = 0;                    // points of the space
  int64_t evaluated = 0;                     // distinct plans compiled, verified and scored (any rung)
  int64_t verified = 0;                      // distinct plans that compiled and verified
  int64_t simulations = 0;                   // plan × rung scorings (the baselines one each)
  int64_t trial_runs = 0;                    // engine runs over every scoring (each trial once per plan)
  bool stopped_by_budget = false;
  // What the figures rest on that a reader should know (no cost: section: the cost model's
  // defaults; no straggler: section: no tail, every trial the same step).
  std::vector<std::string> notes;
  double wall_s = 0, time_to_best_s = 0;     // time to the first scoring of the plan that ends best
  std::vector<LogEntry> log;
};

// Throws ConfigError for a config that does not compile as written, std::invalid_argument for
// bad options: trials < 1, a space that check_space rejects, a memory budget that is not a whole
// byte count > 0, or one given for a config whose memory model has no byte sizes (every peak
// would be 0 B). Never returns a plan over the memory budget.
TuneReport tune(const PipelineConfig& cfg, const TuneOptions& opts);

// A measured job for tune (docs/tune.md "From a trace"): one or more ppstream traces of one job
// (each a `simulate --cluster --trace-every-rank --trace T.json` file with T.json.config.yaml
// beside it, or a `replay --trace DIR` directory), lifted into their compiled, verified programs
// (whatif::lift_ppstream_trace) and pooled into per-(rank, op kind, stage) costs and per-step
// arrival delays.
struct TraceJob {
  std::vector<std::string> paths;
  std::string config_path;  // the first trace's config file
  PipelineConfig config;    // the plans' base: the config that ran
  int32_t steps = 0;        // measured steps over every trace
  std::shared_ptr<const tune_detail::TraceStats> stats;
};
// Throws whatif::LiftError naming the file: a trace without its config beside it, traces of
// different configs (their to_yaml differs), or any lifting error (lifted.h); std::invalid_argument
// for no paths.
TraceJob lift_traces(const std::vector<std::string>& paths);
// The search over variants of job.config, each plan's instructions costed from the measured job
// and its trials' tails the observed arrival delays. Throws as tune(cfg, opts).
TuneReport tune(const TraceJob& job, const TuneOptions& opts);

// "--memory-budget" text: a whole number of bytes, optionally with a unit (B; KiB MiB GiB TiB =
// 2^10…2^40; KB MB GB TB = 10^3…10^12; a decimal number is allowed with a unit when the
// product is whole bytes, "1.5GiB"). Throws std::invalid_argument naming the text: empty, not
// a number, an unknown unit (e.g. "G": GiB or GB?), 0, negative, a fraction of a byte, inf,
// nan, or above 2^63 bytes.
double parse_memory_budget(const std::string& text);

// The comparisons a plan's figures make (docs/tune.md "Outputs"): every baseline over the same
// trials as the plan (the first `trials` draws: common random numbers), whatever the baselines
// were scored over. `baseline_score_ms`: label ("as written", "inline", …) → the objective over
// those trials; `best`: the lowest of the policy baselines ("" when the config has no DP).
struct Comparison {
  int32_t trials = 0;
  std::vector<std::pair<std::string, double>> baseline_score_ms;
  std::string best;
  double best_score_ms = 0;
  double vs_as_written = 0, vs_best = 0;  // (plan − baseline) / baseline, of the objective
};
Comparison compare(const TuneReport& r, const PlanResult& p);

// JSON {"format":"ppstream.tune/1", "plans":[{settings, p50_ms, p99_ms, mean_ms,
// peak_memory_bytes, …}], "evaluated", "verified", "baselines", "log", …}; table for people.
std::string tune_json(const TuneReport& r, int indent = 2);
std::string tune_table(const TuneReport& r);

}  // namespace ppstream::tune
