// `tune --from-trace` (docs/tune.md "From a trace"): the search on a lifted trace's measured costs
// and observed tails. A simulator trace's costs are the config's cost model, so the search on it
// must find what the search on the config finds; a two-step replay-shaped directory's tails are
// resampled per rank and trial; instructions the trace never measured are counted, never silent.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "../analyze/util.h"
#include "ppstream/analyze/trace_writer.h"
#include "ppstream/config/config.h"
#include "ppstream/lower/lower.h"
#include "ppstream/program/format.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/sim/trace.h"
#include "ppstream/sim/trials.h"
#include "ppstream/tune/tune.h"
#include "ppstream/whatif/whatif.h"
#include "tune/trace_costs.h"

namespace ppstream::tune {
namespace {
using analyze::testing::temp_dir;

// PP 2 × FSDP 2 (4 ranks), 1F1B, a fixed 40 ms tail on one member's reductions (tests/python/replay's
// shape): every trial of the config draws the same delays, so one traced step is its whole tail.
const char* kConfig = R"(pipeline_parallel_size: 2
num_layers: 8
micro_batch_num: 4
schedule: SCHEDULE
pipeline_parallel_interleave_num: VPP
data_parallel: {mode: fsdp, shard_size: 2, replicate_size: 1, reduce_grad: inline}
cost: {forward_ms_per_layer: 10.0, backward_ms_per_layer: 20.0, optimizer_ms: 4.0, p2p_latency_ms: 2.0,
       p2p_bandwidth_gb_per_s: 10, activation_bytes: 1048576, grad_bytes_per_layer: 1.0e7, param_bytes_per_layer: 5.0e6,
       collective_alpha_ms: 1.0, shard_bandwidth_gb_per_s: 20}
straggler:
  tails:
    - {pp_rank: 1, dp_index: 1, delay_ms: DELAY, collectives: [reduce_grad]}
)";

PipelineConfig config(const std::string& schedule = "1f1b", int vpp = 1, double delay_ms = 40) {
  std::string t = kConfig;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"SCHEDULE", schedule}, {"VPP", std::to_string(vpp)}, {"DELAY", std::to_string(delay_ms)}})
    t.replace(t.find(from), from.size(), to);
  return load_config_text(t, "tune-trace");
}

// simulate --cluster --trace-every-rank --trace PATH (writes PATH.config.yaml beside it).
void simulate_to(const PipelineConfig& cfg, const std::string& path) {
  sim::SimOptions o;
  o.policies = {cfg.reduce_grad};
  o.cluster = true;
  o.trace_every_rank = true;
  o.trace_path = path;
  sim::simulate(cfg, o);
}

const PlanResult* find(const TuneReport& r, const std::string& label) {
  for (const PlanResult& p : r.plans)
    if (p.label == label) return &p;
  return nullptr;
}

int64_t total(const std::map<std::string, int64_t>& m) {
  int64_t n = 0;
  for (const auto& [k, v] : m) n += v;
  return n;
}

// The trace's timestamps are µs with 3 decimals: each measured cost is within 1e-6 ms of the
// model's, and a step adds a few hundred of them.
constexpr double kTolMs = 1e-3;

TEST(TuneFromTrace, SimulatorTraceFindsTheConfigsBestPlanAndP99) {
  const PipelineConfig cfg = config();
  const auto dir = temp_dir("tune_trace_sim");
  const std::string trace = (dir / "t.json").string();
  simulate_to(cfg, trace);
  TuneOptions o;
  o.trials = 4;
  o.show = 8;
  o.space = {{"schedule", {"gpipe", "1f1b", "zb_h1"}}, {"data_parallel.reduce_grad", {"inline", "async"}}};
  const TuneReport on_cfg = tune(cfg, o);
  const TraceJob job = lift_traces({trace});
  EXPECT_EQ(job.steps, 1);
  const TuneReport on_trace = tune(job, o);
  EXPECT_EQ(on_trace.cost_source, "trace");
  ASSERT_FALSE(on_cfg.plans.empty());
  ASSERT_EQ(on_trace.plans.size(), on_cfg.plans.size());
  EXPECT_EQ(on_trace.plans.front().label, on_cfg.plans.front().label);
  EXPECT_NEAR(on_trace.plans.front().p99_ms, on_cfg.plans.front().p99_ms, kTolMs);
  for (const PlanResult& p : on_cfg.plans) {
    const PlanResult* q = find(on_trace, p.label);
    ASSERT_NE(q, nullptr) << p.label;
    EXPECT_NEAR(q->p99_ms, p.p99_ms, kTolMs) << p.label;
    EXPECT_NEAR(q->p50_ms, p.p50_ms, kTolMs) << p.label;
    EXPECT_EQ(total(q->unmeasured_instructions), 0) << p.label;  // the trace's placement: all measured
  }
  // The tail is the trace's: inline waits the 40 ms, async hides it (so the costs alone cannot agree).
  EXPECT_NEAR(on_trace.as_written.p99_ms, on_cfg.as_written.p99_ms, kTolMs);
  EXPECT_GT(on_trace.baselines.at(0).p99_ms, on_trace.baselines.at(1).p99_ms + 10);
  // The config as written is the trace's own programs: every instruction measured.
  EXPECT_GT(on_trace.as_written.measured_instructions, 0);
  EXPECT_TRUE(on_trace.as_written.derived_instructions.empty());
  EXPECT_TRUE(on_trace.as_written.unmeasured_instructions.empty());
  // zb_h1 splits the backward the 1F1B trace measured whole: I and W derived from B, counted.
  const PlanResult* zb = nullptr;
  for (const PlanResult& p : on_trace.plans)
    if (p.label.find("schedule=zb_h1") != std::string::npos) zb = &p;
  ASSERT_NE(zb, nullptr);
  EXPECT_EQ(zb->derived_instructions.at("I"), 16);  // 4 microbatches × 2 stages × 2 DP ranks
  EXPECT_EQ(zb->derived_instructions.at("W"), 16);
  EXPECT_NE(tune_table(on_trace).find("derived from measured ones (I 16, W 16)"), std::string::npos);
}

// zbv places stage 3 on PP rank 0 where interleaved 1F1B had stage 2: its costs come from the
// ranks that ran stage 3 (derived, counted), and the arrival delays of collectives the rank never
// had from the config's straggler model (counted as "KIND arrival").
TEST(TuneFromTrace, StagesPlacedElsewhereAreDerivedFromTheRanksThatRanThem) {
  const PipelineConfig cfg = config("interleaved_1f1b", 2);
  const auto dir = temp_dir("tune_trace_zbv");
  const std::string trace = (dir / "t.json").string();
  simulate_to(cfg, trace);
  TuneOptions o;
  o.trials = 2;
  o.space = {{"schedule", {"zbv"}}};
  const TuneReport on_trace = tune(lift_traces({trace}), o);
  const TuneReport on_cfg = tune(cfg, o);
  ASSERT_EQ(on_trace.plans.size(), 1u);
  const PlanResult& p = on_trace.plans.front();
  EXPECT_EQ(p.derived_instructions.at("F"), 16);  // stages 2 and 3 moved: 4 microbatches × 2 stages × 2 DP ranks
  EXPECT_EQ(p.derived_instructions.at("REDUCE_GRAD"), 4);
  EXPECT_EQ(p.unmeasured_instructions.at("REDUCE_GRAD arrival"), 4);
  EXPECT_EQ(p.unmeasured_instructions.count("F"), 0u);
  EXPECT_NE(tune_table(on_trace).find("never measured, from the config's cost model (REDUCE_GRAD arrival 4"),
            std::string::npos)
      << tune_table(on_trace);
  EXPECT_NEAR(p.p99_ms, on_cfg.plans.at(0).p99_ms, kTolMs);  // the costs agree: so must the plan
}

// Rule 4: what no rank measured takes the config's cost model and its straggler model, each
// instruction counted (here a job that measured nothing: every instruction).
TEST(TuneFromTrace, NeverMeasuredInstructionsTakeTheConfigsModel) {
  const PipelineConfig cfg = config();
  const sim::CompiledPlan plan(cfg, ReducePolicy::NONE, true);
  const sim::TrialSetup setup = sim::trial_setup(cfg, plan.world());
  tune_detail::TraceStats nothing;
  nothing.world = plan.world();
  const auto ranks = static_cast<size_t>(plan.world().pp * plan.world().dp());
  nothing.cost.resize(ranks);
  nothing.arrival.assign(1, std::vector<tune_detail::TraceStats::Arrivals>(ranks));
  const tune_detail::PlanTraceCosts costs(plan, setup, nothing);
  const sim::SimCostModel model = sim::trial_cost_model(plan, setup, 0);
  const std::vector<std::vector<double>> arrival = costs.arrivals(std::vector<int32_t>(ranks, 0), 0);
  int64_t with_cost = 0, checked = 0;
  for (size_t p = 0; p < plan.programs().programs.size(); ++p) {
    const Program& prog = plan.programs().programs[p];
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      if (i.op == OpKind::RECORD || i.op == OpKind::WAIT) continue;
      ++with_cost;
      const double want = i.op == OpKind::BATCH ? model.batch_ms(prog, i)
                          : i.op == OpKind::UNSHARD || i.op == OpKind::REDUCE_GRAD ? model.collective_ms(prog, i)
                                                                                   : model.compute_ms(prog, i);
      EXPECT_DOUBLE_EQ(costs.base_ms()[p][k], want) << to_string(i.op);
      EXPECT_DOUBLE_EQ(arrival[p][k], model.arrival_delay_ms(prog, i)) << to_string(i.op);
      checked += want > 0;
    }
  }
  EXPECT_GT(checked, 0);
  EXPECT_EQ(costs.origins().measured, 0);
  int64_t counted = 0;
  for (const auto& [kind, n] : costs.origins().unmeasured)
    if (kind.find("arrival") == std::string::npos) counted += n;
  EXPECT_EQ(counted, with_cost);
  EXPECT_EQ(costs.origins().unmeasured.at("REDUCE_GRAD arrival"), 4);
}

// Rule 2 for P2P: a batch width a rank never had (interleaved ZB at PP 4 batches two sends where
// the job's batches were one op wide) is the measured width's time scaled by the config model's
// ratio of the two widths. A job whose one-op batches took twice the model's time: every batch of
// the plan, measured or derived, takes twice the model's time.
TEST(TuneFromTrace, AnUnmeasuredBatchWidthScalesTheMeasuredOne) {
  PipelineConfig cfg = config("interleaved_zb", 2);
  apply_overrides(cfg, {{"pipeline_parallel_size", "4"}, {"micro_batch_num", "8"}, {"num_layers", "16"},
                        {"pipeline_parallel_overlap_b_f", "false"}});
  const sim::CompiledPlan plan(cfg, ReducePolicy::NONE, true);
  const sim::TrialSetup setup = sim::trial_setup(cfg, plan.world());
  const sim::SimCostModel model = sim::trial_cost_model(plan, setup, 0);
  const auto ranks = static_cast<size_t>(plan.world().pp * plan.world().dp());
  tune_detail::TraceStats job;
  job.world = plan.world();
  job.cost.resize(ranks);
  job.arrival.assign(1, std::vector<tune_detail::TraceStats::Arrivals>(ranks));
  Instr one;
  one.op = OpKind::BATCH;
  one.p2p.resize(1);
  for (auto& rank : job.cost) rank[{OpKind::BATCH, -1, 1}].add(2 * model.base_batch_ms(one));
  const tune_detail::PlanTraceCosts costs(plan, setup, job);
  int64_t wide = 0;
  for (size_t p = 0; p < plan.programs().programs.size(); ++p) {
    const Program& prog = plan.programs().programs[p];
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      if (i.op != OpKind::BATCH) continue;
      wide += tune_detail::cost_key(i).width > 1;
      EXPECT_NEAR(costs.base_ms()[p][k], 2 * model.batch_ms(prog, i), 1e-12) << to_line(prog, i);
    }
  }
  EXPECT_GT(wide, 0);
  EXPECT_EQ(costs.origins().derived.at("BATCH"), wide);
}

// A replay-shaped directory (replay.inline.rankN.json, steps marked on the host lane) of two
// steps: the straggler's 40 ms tail in step 0, none in step 1. Each trial draws a step per rank,
// so the as-written step times are exactly the two simulated steps, both drawn.
TEST(TuneFromTrace, ReplayDirectoryTailsAreResampledPerTrialFromTheMeasuredSteps) {
  const auto dir = temp_dir("tune_trace_replay");
  const PipelineConfig slow = config(), fast = config("1f1b", 1, 0);
  LowerOptions lo;
  lo.expanded = true;
  const ProgramSet set = compile(slow, lo);
  std::vector<sim::SimCostModel> models;
  models.reserve(2);
  std::vector<EngineResult> runs;
  for (const PipelineConfig* c : {&slow, &fast}) {
    models.emplace_back(set, *c, sim::parse_cost_spec(c->extra_sections.at("cost"), c->num_stages()),
                        sim::StragglerModel(sim::parse_straggler_spec(c->extra_sections.at("straggler"), set.world,
                                                                      c->num_stages()), set.world));
  }
  for (const sim::SimCostModel& m : models) {
    EngineOptions eo;
    eo.platform = PlatformKind::ASCEND_MINDSPORE;
    eo.cost = &m;
    runs.push_back(run_engine(set, eo));
    ASSERT_TRUE(runs.back().completed);
  }
  ASSERT_GT(runs[0].makespan_ms, runs[1].makespan_ms + 10);
  std::ofstream(dir / "replay.inline.config.yaml") << to_yaml(slow);
  const double gap_ms = runs[0].makespan_ms + 500;
  for (const Program& p : set.programs) {
    analyze::TraceWriter w("replay", true);
    for (int k = 0; k < 2; ++k) {
      w.step(p.rank, k, k * gap_ms * 1000, runs[static_cast<size_t>(k)].makespan_ms * 1000);
      sim::add_trace_slices(w, set, runs[static_cast<size_t>(k)], [&](const Program& q) { return q.rank == p.rank; },
                            k * gap_ms, &models[static_cast<size_t>(k)]);
    }
    std::ofstream(dir / ("replay.inline.rank" + std::to_string(p.rank.v) + ".json")) << w.str();
  }
  const TraceJob job = lift_traces({dir.string()});
  EXPECT_EQ(job.steps, 2);
  TuneOptions o;
  o.trials = 16;
  o.space = {{"data_parallel.reduce_grad", {"inline"}}};
  const TuneReport r = tune(job, o);
  const double slow_ms = runs[0].makespan_ms, fast_ms = runs[1].makespan_ms;
  // Only the straggler's draw matters (every other member arrives at once in both steps): each
  // trial's step is one of the two measured ones, and both are drawn.
  EXPECT_NEAR(r.as_written.p99_ms, slow_ms, kTolMs);
  const double k = (r.as_written.mean_ms - fast_ms) / (slow_ms - fast_ms) * o.trials;  // trials that drew step 0
  EXPECT_NEAR(k, std::round(k), 1e-3);
  EXPECT_GE(std::round(k), 1);
  EXPECT_LE(std::round(k), o.trials - 1);
}

// Common random numbers: a trial's draw depends on (seed, trial, rank) only, never on the plan.
TEST(TuneFromTrace, TrialStepsAreAFunctionOfSeedAndTrial) {
  std::set<int32_t> seen;
  bool differs = false;
  for (uint64_t t = 0; t < 16; ++t) {
    const std::vector<int32_t> a = tune_detail::trial_steps(0, t, 8, 3);
    EXPECT_EQ(a, tune_detail::trial_steps(0, t, 8, 3));
    differs |= a != tune_detail::trial_steps(1, t, 8, 3);
    seen.insert(a.begin(), a.end());
  }
  EXPECT_TRUE(differs);
  EXPECT_EQ(seen, (std::set<int32_t>{0, 1, 2}));
  EXPECT_EQ(tune_detail::trial_steps(5, 3, 4, 1), std::vector<int32_t>(4, 0));
}

void expect_lift_error(const std::vector<std::string>& paths, const std::string& what) {
  try {
    lift_traces(paths);
    ADD_FAILURE() << "no error for " << paths.front();
  } catch (const whatif::LiftError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(TuneFromTrace, TracesWithoutTheirConfigOrOfTwoJobsAreLocatedErrors) {
  const auto dir = temp_dir("tune_trace_errors");
  const std::string a = (dir / "a.json").string(), b = (dir / "b.json").string();
  simulate_to(config(), a);
  simulate_to(config("1f1b", 1, 10), b);
  expect_lift_error({a, b}, b + ": its config " + b + ".config.yaml is not " + a + ".config.yaml");
  std::filesystem::remove(a + ".config.yaml");
  expect_lift_error({a}, a + ": no " + a + ".config.yaml beside it");
  EXPECT_THROW(lift_traces({}), std::invalid_argument);
}

}  // namespace
}  // namespace ppstream::tune
