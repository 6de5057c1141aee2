// The what-if figures on the artifact's two real Megatron-LM traces agree with the artifact's own
// results (tests/data/whatif/result-*.json, mw-*.json, ms-*.json; NOTICE.md): S, S per DP rank,
// stage and op type within 1 % relative, M_W and M_S within 0.03, the same worst worker, stage and
// op type. The expected values are read from the artifact's files, never typed in here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <tuple>
#include <nlohmann/json.hpp>

#include "ppstream/analyze/megatron.h"
#include "ppstream/analyze/readers.h"
#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {
namespace {

std::string data(const std::string& name) { return std::string(PPSTREAM_SOURCE_DIR) + "/tests/data/whatif/" + name; }

nlohmann::json load(const std::string& name) {
  std::ifstream f(data(name));
  return nlohmann::json::parse(f);
}

std::string worst_of(const nlohmann::json& m) {
  std::string best;
  double v = -1e300;
  for (const auto& [k, x] : m.items()) {
    if (x.get<double>() > v) {
      v = x.get<double>();
      best = k;
    }
  }
  return best;
}
std::string worst_of(const Attribution& m) {
  return std::max_element(m.begin(), m.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
}

void expect_map_near(const Attribution& ours, const nlohmann::json& theirs, const char* what) {
  ASSERT_EQ(ours.size(), theirs.size()) << what;
  for (const auto& [k, v] : theirs.items()) {
    ASSERT_TRUE(ours.count(k)) << what << " " << k;
    EXPECT_NEAR(ours.at(k), v.get<double>(), 0.01 * v.get<double>()) << what << " " << k;
  }
  EXPECT_EQ(worst_of(ours), worst_of(theirs)) << what;
}

// Both evaluators (docs/whatif.md "Evaluation on the engine"): the graph's and the engine's on
// the lifted, verified programs.
class Artifact : public ::testing::TestWithParam<std::tuple<const char*, Evaluator>> {};

TEST_P(Artifact, FiguresMatchTheArtifactsResult) {
  const std::string t = std::get<0>(GetParam());
  WhatIfOptions o;
  o.evaluator = std::get<1>(GetParam());
  const auto r = analyze_paths({data("timeline-" + t + ".json.gz")}, o);
  const auto res = load("result-" + t + ".json");
  const double s = res["blocking_slowdown"].get<double>();
  EXPECT_NEAR(r.slowdown, s, 0.01 * s);
  // launch_slowdown: the timeline writes communication from its group's last arrival, so it is
  // not bitwise the artifact's (docs/whatif.md "Agreement with the artifact": ST 5e-5 relative).
  const double ls = res["launch_slowdown"].get<double>();
  EXPECT_NEAR(r.launch_slowdown, ls, 1e-4 * ls);
  ASSERT_TRUE(r.attributed);
  expect_map_near(r.by_dp_rank, res["blocking_decompose_by_dp_rank"], "by_dp_rank");
  expect_map_near(r.by_stage, res["blocking_decompose_by_stage"], "by_stage");
  expect_map_near(r.by_op_type, res["blocking_decompose_by_optype"], "by_op_type");
  EXPECT_NEAR(r.m_w.value(), load("mw-" + t + ".json")["Mw"].get<double>(), 0.03);
  EXPECT_NEAR(r.m_s.value(), load("ms-" + t + ".json")["Ms"].get<double>(), 0.03);
  // Per step: S_t within 1 %, and the ideal step time (s in the artifact, ms here).
  ASSERT_EQ(r.steps.size(), res["blocking_step_slowdown"].size());
  for (const StepFigures& f : r.steps) {
    const std::string key = std::to_string(f.step);
    EXPECT_NEAR(f.slowdown, res["blocking_step_slowdown"][key].get<double>(), 0.01 * f.slowdown) << key;
    EXPECT_NEAR(f.ideal_ms, 1e3 * res["step_t_noblk"][key].get<double>(), 0.01 * f.ideal_ms) << key;
    EXPECT_NEAR(f.nodelay_ms, 1e3 * res["step_t_nodelay"][key].get<double>(), 0.01 * f.nodelay_ms) << key;
    // The re-simulation with measured costs and launch delays gives the trace's step back (the
    // engine: within its clamp of the trace's small negative delays, docs/whatif.md "Negative costs").
    EXPECT_NEAR(f.resimulated_ms, f.measured_ms, (o.evaluator == Evaluator::ENGINE ? 1e-4 : 1e-6) * f.measured_ms) << key;
  }
}

// The engine on ST only: on AR (about 20 s in Debug) its figures are the graph's
// (whatif_graph_programs_test.cpp compares them on 6 of its steps).
INSTANTIATE_TEST_SUITE_P(Traces, Artifact,
                         ::testing::Values(std::tuple{"ST", Evaluator::GRAPH}, std::tuple{"AR", Evaluator::GRAPH},
                                           std::tuple{"ST", Evaluator::ENGINE}),
                         [](const ::testing::TestParamInfo<Artifact::ParamType>& p) {
                           return std::string(std::get<0>(p.param)) + (std::get<1>(p.param) == Evaluator::ENGINE ? "_engine" : "_graph");
                         });

// The counterfactual: both traces reduce after the embedding all-reduce, serially before clip.
// Moving each chunk's reduction behind its last backward on the DP lane (async) can only start it
// earlier, so the predicted step is shorter; inline (blocking the compute after it) is not shorter
// than async. Deterministic figures of one trace, no timing.
TEST(Counterfactual, AsyncReductionShortensTheSTStep) {
  analyze::TimerTrace t;
  analyze::read_timer_trace(data("timeline-ST.json.gz"), t);
  WhatIfOptions o;
  o.reduce_grad = ReducePolicy::ASYNC;
  const auto async = analyze(t, o);
  o.reduce_grad = ReducePolicy::INLINE;
  const auto in = analyze(t, o);
  ASSERT_TRUE(async.predicted && in.predicted);
  EXPECT_EQ(async.predicted->policy, "async");
  EXPECT_LT(async.predicted->measured_costs_ms, async.predicted->traced_ms - 1.0);
  EXPECT_LT(async.predicted->ideal_costs_ms, async.predicted->traced_ideal_ms);
  EXPECT_GE(in.predicted->measured_costs_ms, async.predicted->measured_costs_ms);
  EXPECT_EQ(async.predicted->per_step_ms.size(), async.steps.size());
}

// Mutations of the ST trace (DP 2 x PP 4) the lifting must refuse with a located message.
class Broken : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    trace_ = new analyze::TimerTrace;
    analyze::read_timer_trace(data("timeline-ST.json.gz"), *trace_);
  }
  static void TearDownTestSuite() { delete trace_; }
  // A copy without the ops `drop` selects.
  template <class Drop>
  static analyze::TimerTrace without(Drop drop) {
    analyze::TimerTrace t;
    for (const auto& op : trace_->ops) {
      if (!drop(op, trace_->strings.str(op.name))) t.ops.push_back(op);
    }
    // Re-intern in the same order so names keep their ids.
    for (size_t i = 1; i < trace_->strings.size(); ++i) t.strings.intern(trace_->strings.str(static_cast<uint32_t>(i)));
    return t;
  }
  static std::string error_of(const analyze::TimerTrace& t) {
    try {
      analyze(t);
    } catch (const LiftError& e) {
      return e.what();
    }
    return "";
  }
  static analyze::TimerTrace* trace_;
};
analyze::TimerTrace* Broken::trace_ = nullptr;

TEST_F(Broken, MissingPeerNamesTheOpAndWhatIsMissing) {
  // Stage 3's last forward-recv gone everywhere: stage 2's last forward-send has no peer.
  const auto e = error_of(without([](const analyze::TimerOp& op, const std::string& n) {
    return op.pp_rank == 3 && n == "forward-recv" && op.seq == 3;
  }));
  EXPECT_NE(e.find("no peer"), std::string::npos) << e;
  EXPECT_NE(e.find("stage 2"), std::string::npos) << e;
  EXPECT_NE(e.find("forward-send"), std::string::npos) << e;
}

TEST_F(Broken, UnmatchedCollective) {
  const auto e = error_of(without([](const analyze::TimerOp& op, const std::string& n) {
    return op.pp_rank == 3 && n == "embedding-grads-all-reduce";
  }));
  EXPECT_NE(e.find("unmatched collective"), std::string::npos) << e;
  EXPECT_NE(e.find("embedding-grads-all-reduce"), std::string::npos) << e;
}

TEST_F(Broken, OpMissingOnOneWorkerAndStep) {
  const auto e = error_of(without([](const analyze::TimerOp& op, const std::string& n) {
    return op.dp_rank == 1 && op.pp_rank == 2 && op.step == 25 && n == "backward-compute" && op.seq == 1;
  }));
  EXPECT_NE(e.find("DP rank 1, stage 2, step 25, backward-compute #1: missing"), std::string::npos) << e;
}

TEST_F(Broken, StepsOutsideTheTrace) {
  WhatIfOptions o;
  o.steps = std::pair{100000, 100001};
  EXPECT_THROW(analyze(*trace_, o), LiftError);
  // The error names the files and the steps they hold (breaker4: "no timer op of a known type in
  // steps 1-2" named neither; ST's steps start at 23; 12 runs shown). Fails on 0415469's wording.
  try {
    analyze(*trace_, o);
  } catch (const LiftError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("no timer op of a known type in steps 100000-100001 of "), std::string::npos) << msg;
    EXPECT_NE(msg.find("timeline-ST.json.gz; the trace holds steps 23, 25, 33-34, 36, 259, 261, 263-264, 266, 273, 276, 278, 288, …"
                       " (32 steps in all)"), std::string::npos) << msg;
  }
}

// `ppstream analyze` reads the timeline format too: one timeline per (DP, PP) worker.
TEST(TimerTrace, AnalyzeReadsOneTimelinePerWorker) {
  analyze::TraceSet set;
  analyze::read_paths({data("timeline-ST.json.gz")}, set);
  ASSERT_EQ(set.ranks.size(), 8u);  // DP 2 x PP 4
  const auto& last = set.ranks[7];  // rank = PP rank * DP + DP rank
  EXPECT_EQ(last.pp_rank, 3);
  size_t p2p = 0, reductions = 0, compute = 0;
  for (const auto& s : last.slices) {
    p2p += s.kind == analyze::SliceKind::P2P;
    reductions += analyze::is_reduction(s);
    compute += s.kind == analyze::SliceKind::COMPUTE;
  }
  // 32 steps: per step 4 forward-recv + 4 backward-send; reduce-scatter, embedding and clip
  // all-reduces, layernorm all-reduce; 4 + 4 computes, gc, optimizer.
  EXPECT_EQ(p2p, 32u * 8);
  EXPECT_EQ(reductions, 32u * 4);
  EXPECT_EQ(compute, 32u * 10);
  EXPECT_EQ(last.steps.size(), 32u);
}

TEST(TimerLane, ParsesTheArtifactsThreadNames) {
  auto l = analyze::parse_timer_lane("PP rank 3, TP rank 1, dp-comm");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->pp_rank, 3);
  EXPECT_EQ(l->tp_rank, 1);
  EXPECT_EQ(l->lane, analyze::TimerLane::DP_COMM);
  EXPECT_FALSE(analyze::parse_timer_lane("PP rank 3, TP rank 1, misc"));
  EXPECT_FALSE(analyze::parse_timer_lane("PP rank x, TP rank 1, compute"));
  EXPECT_FALSE(analyze::parse_timer_lane("stream 7"));
}

}  // namespace
}  // namespace ppstream::whatif
