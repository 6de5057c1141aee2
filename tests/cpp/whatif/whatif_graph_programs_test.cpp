// The Megatron path's lifted graph as stream programs (docs/whatif.md "Lifting as programs"): on
// both artifact traces, with the reductions as traced and re-placed (async, inline), the lifted
// programs verify and the engine (`strict-timed`) gives every step of every graph evaluation
// without launch delays — measured, ideal, each attribution group, M_W / M_S, the prediction —
// the graph evaluator's own value, and the figures are those of the run without the check.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "../cli_run.h"
#include "ppstream/analyze/megatron.h"
#include "ppstream/program/format.h"
#include "ppstream/whatif/whatif.h"

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
  const WhatIfResult plain = analyze(t, o);
  o.check_programs = true;
  const WhatIfResult checked = analyze(t, o);
  ASSERT_TRUE(checked.programs_check);
  const ProgramsCheck& c = *checked.programs_check;
  EXPECT_EQ(c.programs, int64_t{checked.dp} * checked.pp);
  EXPECT_GT(c.instructions, checked.graph_ops * checked.dp);  // every op, plus its RECORD / WAITs
  // nodelay and every attribution over all steps, the ideal and the prediction's.
  const auto steps = static_cast<int64_t>(checked.steps.size());
  EXPECT_GE(c.runs, steps * (checked.attributed ? 4 + checked.dp + checked.pp : 4));
  EXPECT_LT(c.max_diff_ms, 1e-9) << c.runs << " runs, " << c.instructions << " instructions";
  EXPECT_EQ(checked.slowdown, plain.slowdown);
  EXPECT_EQ(checked.by_dp_rank, plain.by_dp_rank);
  EXPECT_EQ(checked.m_w, plain.m_w);
  ASSERT_TRUE(checked.predicted && plain.predicted);
  EXPECT_EQ(checked.predicted->measured_costs_ms, plain.predicted->measured_costs_ms);
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
  EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("programs_check"));
}

}  // namespace
}  // namespace ppstream::whatif
