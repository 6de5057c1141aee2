// The Megatron path's lifted graph as stream programs (docs/whatif.md "Lifting as programs",
// "Evaluation on the engine"): on both artifact traces, with the reductions as traced and
// re-placed (async, inline), the lifted programs verify and the engine (`strict-timed`, the
// default evaluator) gives every step of every evaluation — the re-simulation with launch
// delays, nodelay, ideal, each attribution group, M_W / M_S, the prediction — the graph
// evaluator's own value, and its figures are those of the graph evaluator alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "../cli_run.h"
#include "ppstream/analyze/megatron.h"
#include "ppstream/program/format.h"
#include "ppstream/verify/verify.h"
#include "ppstream/whatif/whatif.h"
#include "whatif/graph.h"
#include "whatif/engine_eval.h"
#include "whatif/graph_programs.h"
#include "whatif/job.h"

namespace ppstream::whatif {
namespace {

std::string data(const std::string& name) { return std::string(PPSTREAM_SOURCE_DIR) + "/tests/data/whatif/" + name; }

class LiftedPrograms : public ::testing::TestWithParam<std::tuple<const char*, ReducePolicy>> {};

TEST_P(LiftedPrograms, VerifyAndTheEngineGivesTheGraphsSteps) {
  const auto [trace_name, policy] = GetParam();
  analyze::TimerTrace t;
  analyze::read_timer_trace(data(std::string("timeline-") + trace_name + ".json.gz"), t);
  WhatIfOptions o;
  o.reduce_grad = policy;
  if (std::string(trace_name) == "AR") {  // 44 steps, 117,216 ops: 6 steps check the same rules at a seventh of the cost
    int32_t first = t.ops.front().step;
    for (const auto& op : t.ops) first = std::min(first, op.step);
    o.steps = std::pair{first, first + 5};
  }
  o.evaluator = Evaluator::GRAPH;
  const WhatIfResult plain = analyze(t, o);
  o.evaluator = Evaluator::ENGINE;
  o.check_programs = true;
  const WhatIfResult checked = analyze(t, o);
  ASSERT_TRUE(checked.programs_check);
  const ProgramsCheck& c = *checked.programs_check;
  EXPECT_EQ(c.programs, int64_t{checked.dp} * checked.pp);
  EXPECT_GT(c.instructions, checked.graph_ops * checked.dp);  // every op, plus its RECORD / WAITs
  // nodelay and every attribution over all steps, the ideal and the prediction's (and the
  // engine's re-simulation with launch delays, not compared: below).
  const auto steps = static_cast<int64_t>(checked.steps.size());
  EXPECT_GE(c.runs, steps * (checked.attributed ? 5 + checked.dp + checked.pp : 5));
  EXPECT_LT(c.max_diff_ms, 1e-9) << c.runs << " runs, " << c.instructions << " instructions";
  EXPECT_DOUBLE_EQ(checked.slowdown, plain.slowdown);
  // The re-simulation with launch delays: the engine takes the trace's small negative delays and
  // transfers (rounding, down to -0.015 ms on ST) as 0, so it is close, not equal.
  EXPECT_LT(checked.max_resim_error, 1e-4);
  ASSERT_EQ(checked.by_dp_rank.size(), plain.by_dp_rank.size());
  for (const auto& [d, v] : plain.by_dp_rank) EXPECT_DOUBLE_EQ(checked.by_dp_rank.at(d), v) << d;
  ASSERT_EQ(checked.m_w.has_value(), plain.m_w.has_value());
  if (plain.m_w) {
    EXPECT_DOUBLE_EQ(*checked.m_w, *plain.m_w);
  }
  ASSERT_EQ(checked.steps.size(), plain.steps.size());
  for (size_t s = 0; s < plain.steps.size(); ++s) {
    EXPECT_NEAR(checked.steps[s].resimulated_ms, plain.steps[s].resimulated_ms, 1e-4 * plain.steps[s].resimulated_ms);
    EXPECT_DOUBLE_EQ(checked.steps[s].nodelay_ms, plain.steps[s].nodelay_ms);
  }
  ASSERT_EQ(checked.ideal_timeline.size(), plain.ideal_timeline.size());
  for (size_t k = 0; k < plain.ideal_timeline.size(); ++k) {
    EXPECT_DOUBLE_EQ(checked.ideal_timeline[k].start_ms, plain.ideal_timeline[k].start_ms) << k;
    EXPECT_DOUBLE_EQ(checked.ideal_timeline[k].end_ms, plain.ideal_timeline[k].end_ms) << k;
  }
  ASSERT_TRUE(checked.predicted && plain.predicted);
  EXPECT_DOUBLE_EQ(checked.predicted->measured_costs_ms, plain.predicted->measured_costs_ms);
  // AR's case of whatif_counterfactual_test.cpp PassMatchesGraph, on this run (AR is costly to read).
  if (policy == ReducePolicy::ASYNC) {
    ASSERT_TRUE(checked.predicted->graph_ms);
    EXPECT_NEAR(checked.predicted->measured_costs_ms, *checked.predicted->graph_ms, 1e-9 * *checked.predicted->graph_ms);
  }
}

// AR with one policy and 6 steps: its runs are the test's cost.
INSTANTIATE_TEST_SUITE_P(Traces, LiftedPrograms,
                         ::testing::Values(std::tuple{"ST", ReducePolicy::ASYNC}, std::tuple{"ST", ReducePolicy::INLINE},
                                           std::tuple{"AR", ReducePolicy::ASYNC}),
                         [](const ::testing::TestParamInfo<LiftedPrograms::ParamType>& p) {
                           return std::string(std::get<0>(p.param)) + "_" + to_string(std::get<1>(p.param));
                         });

// The CLI flag: --json gains programs_check (ST: 8 workers); without it the document is as before.
TEST(LiftedProgramsCli, CheckProgramsFlag) {
  const auto r = testing_cli::run_ppstream("whatif " + data("timeline-ST.json.gz") + " --json --check-programs");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("programs_check")) << r.out;
  EXPECT_EQ(j["programs_check"]["programs"], 8);
  EXPECT_LT(j["programs_check"]["max_diff_ms"].get<double>(), 1e-9);
  const auto plain = testing_cli::run_ppstream("whatif " + data("timeline-ST.json.gz") + " --json");
  const auto pj = nlohmann::json::parse(plain.out);
  EXPECT_FALSE(pj.contains("programs_check"));
  // Verified on the default path too (the engine evaluator), and said so.
  EXPECT_EQ(pj["verified_under"], nlohmann::json::array({"strict"})) << plain.out;
  EXPECT_EQ(pj["lifted_programs"]["programs"], 8);
  EXPECT_EQ(pj["lifted_programs"]["instructions"], j["programs_check"]["instructions"]);
}

// The default evaluator (engine) verifies the lifted programs, as the graph's does: the result
// names the set it verified (the full world), and the lifting every evaluator goes through
// (lift_worlds) refuses programs that break a rule — here two forward sends of stage 0 swapped
// in program order, which the p2p-fifo / event rules catch.
TEST(LiftedProgramsVerify, TheDefaultPathVerifiesTheLiftedPrograms) {
  analyze::TimerTrace t;
  analyze::read_timer_trace(data("timeline-ST.json.gz"), t);
  const WhatIfResult r = analyze(t, {});
  const Job job = build_job(t, std::nullopt);
  std::vector<std::string> notes;
  Graph g = lift_graph(job, notes);
  const GraphPrograms gp = programs_of_graph(job, g, notes);
  EXPECT_EQ(r.lifted.verified_under, std::vector<std::string>{"strict"});
  EXPECT_EQ(r.lifted.programs, int64_t{job.dp} * job.pp);
  EXPECT_EQ(r.lifted.instructions, gp.instructions());
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.starts_with("lifted programs: 8 ranks") && n.find("verified under strict") != std::string::npos;
  }));
  std::vector<size_t> sends;  // positions in g.order of stage 0's paired forward sends
  for (size_t i = 0; i < g.order.size(); ++i) {
    const int32_t k = g.order[i];
    if (k >= 0 && job.ops[static_cast<size_t>(k)].stage == 0 && job.ops[static_cast<size_t>(k)].type == OpType::FWD_SEND &&
        g.group[static_cast<size_t>(k)] >= 0)
      sends.push_back(i);
  }
  ASSERT_GE(sends.size(), 2u);
  std::swap(g.order[sends[0]], g.order[sends[1]]);
  try {
    lift_worlds(job, g, notes, "broken", true);
    ADD_FAILURE() << "the swapped sends verified";
  } catch (const VerifyError& e) {
    EXPECT_NE(std::string(e.what()).find("broken"), std::string::npos) << e.what();
  }
}

// The lifted set round-trips through the canonical text, and the verifier is what makes it
// trustworthy: dropping the WAIT that orders a forward after the receive of its activation is a
// happens-before violation naming that F.
TEST(LiftedProgramsVerify, RoundTripsAndAMissingWaitIsCaught) {
  analyze::TimerTrace t;
  analyze::read_timer_trace(data("timeline-ST.json.gz"), t);
  const Job job = build_job(t, std::nullopt);
  std::vector<std::string> notes;
  const Graph g = lift_graph(job, notes);
  GraphPrograms gp = programs_of_graph(job, g, notes);
  EXPECT_EQ(parse_program_set(to_text(gp.set)), gp.set);
  ASSERT_TRUE(verify(gp.set).empty());
  Program& r1 = gp.set.programs[static_cast<size_t>(gp.dp)];  // stage 1, DP rank 0: its F waits for RECV_F
  auto& ins = r1.instrs;
  size_t f = 0;
  while (f < ins.size() && ins[f].op != OpKind::F) ++f;
  ASSERT_LT(f, ins.size());
  // The RECORD after the BATCH receiving that F's activation, and the compute WAITs on it.
  std::optional<EventId> recv_done;
  for (size_t i = 0; i + 1 < ins.size() && !recv_done; ++i)
    if (ins[i].op == OpKind::BATCH && ins[i].p2p.front().kind == P2PKind::RECV_F && ins[i].p2p.front().mb == ins[f].mb &&
        ins[i].p2p.front().stage == ins[f].stage && ins[i + 1].op == OpKind::RECORD)
      recv_done = ins[i + 1].event;
  ASSERT_TRUE(recv_done);
  const auto before = ins.size();
  std::erase_if(ins, [&](const Instr& in) { return in.op == OpKind::WAIT && in.event == *recv_done; });
  ASSERT_LT(ins.size(), before);
  const auto v = verify(gp.set);
  std::string all;
  for (const auto& x : v) all += x.to_string() + "\n";
  EXPECT_NE(all.find("[happens-before] activation"), std::string::npos) << all;
}

}  // namespace
}  // namespace ppstream::whatif
