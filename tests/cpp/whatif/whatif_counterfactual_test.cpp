// `--reduce-grad` on Megatron timelines as the compiler's place-reductions pass on the lifted
// programs (docs/whatif.md "Counterfactual"): the counterfactual programs verify (and a mutated
// one does not), the async prediction equals the dependency graph's rewrite where the two rules
// coincide (ST, a small generated job; AR in whatif_graph_programs_test.cpp, which reads it
// anyway), and an overlapped trace (async-like) re-placed async
// gives back its own re-simulated steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "ppstream/analyze/megatron.h"
#include "ppstream/verify/verify.h"
#include "ppstream/whatif/whatif.h"
#include "whatif/graph.h"
#include "whatif/graph_counterfactual.h"
#include "whatif/graph_programs.h"
#include "whatif/job.h"

namespace ppstream::whatif {
namespace {

std::string data(const std::string& name) { return std::string(PPSTREAM_SOURCE_DIR) + "/tests/data/whatif/" + name; }

analyze::TimerTrace read(const std::string& file) {
  analyze::TimerTrace t;
  analyze::read_timer_trace(data(file), t);
  return t;
}

// The first `n` steps.
WhatIfOptions first_steps(const analyze::TimerTrace& t, int32_t n, ReducePolicy policy) {
  WhatIfOptions o;
  o.reduce_grad = policy;
  o.decompose_threshold = 1e9;  // no attribution: the prediction is what is tested
  int32_t first = t.ops.front().step;
  for (const auto& op : t.ops) first = std::min(first, op.step);
  o.steps = std::pair{first, first + n - 1};
  return o;
}

struct Lifted {
  Job job;
  GraphPrograms traced;
  std::vector<std::string> notes;
};

Lifted lift(const std::string& file) {
  Lifted l;
  l.job = build_job(read(file), std::nullopt);
  const Graph g = lift_graph(l.job, l.notes);
  l.traced = programs_of_graph(l.job, g, l.notes);
  return l;
}

bool has_rule(const std::vector<Violation>& v, const std::string& rule) {
  return std::any_of(v.begin(), v.end(), [&](const Violation& x) { return x.rule == rule; });
}

// Where the rules coincide — the async reduction after the last backward, FIFO on its lane, one
// drain before clip — the pass's prediction is the graph's: the graph also waits for the last
// backward's send, which on these jobs is off the critical path (stage 0, which sends nothing,
// finishes its backward last by more than every other stage's send).
class PassMatchesGraph : public ::testing::TestWithParam<const char*> {};

TEST_P(PassMatchesGraph, AsyncPredictionIsTheGraphRewrites) {
  const auto t = read(GetParam());
  const WhatIfResult r = analyze(t, first_steps(t, 3, ReducePolicy::ASYNC));
  ASSERT_TRUE(r.predicted && r.predicted->graph_ms && r.predicted->graph_ideal_ms);
  const auto& p = *r.predicted;
  EXPECT_EQ(p.policy, "async");
  EXPECT_EQ(p.traced_policy, "after-backward");
  EXPECT_GT(p.instructions, 0);
  EXPECT_NEAR(p.measured_costs_ms, *p.graph_ms, 1e-9 * *p.graph_ms);
  EXPECT_NEAR(p.ideal_costs_ms, *p.graph_ideal_ms, 1e-9 * *p.graph_ideal_ms);
  EXPECT_LT(p.measured_costs_ms, p.traced_ms);  // the reductions now overlap the pipeline's drain
}

INSTANTIATE_TEST_SUITE_P(Traces, PassMatchesGraph,
                         ::testing::Values("timeline-ST.json.gz", "syn/timeline-SMALL.json.gz"));

// The trace's own policy re-placed gives back the trace: an overlapped job's reductions (after
// each chunk's last backward, on the DP lane, the chain after the last compute waiting for them)
// are what place-reductions' async places, so the prediction is the re-simulated (nodelay) step.
TEST(CounterfactualPass, SamePolicyGivesBackTheResimulatedSteps) {
  const auto t = read("syn/timeline-OVERLAP.json.gz");
  const WhatIfResult r = analyze(t, first_steps(t, 3, ReducePolicy::ASYNC));
  ASSERT_TRUE(r.predicted);
  EXPECT_EQ(r.predicted->traced_policy, "async");
  ASSERT_EQ(r.predicted->per_step_ms.size(), r.steps.size());
  for (size_t s = 0; s < r.steps.size(); ++s)
    EXPECT_NEAR(r.predicted->per_step_ms[s], r.steps[s].nodelay_ms, 1e-9 * r.steps[s].nodelay_ms) << "step " << s;
  // Going back to inline costs: the reduction then blocks compute and the last backward's send.
  const WhatIfResult in = analyze(t, first_steps(t, 3, ReducePolicy::INLINE));
  ASSERT_TRUE(in.predicted);
  EXPECT_GT(in.predicted->measured_costs_ms, r.predicted->measured_costs_ms + 1.0);
}

TEST(CounterfactualPass, ProgramsVerifyAndMutationsFail) {
  Lifted l = lift("timeline-ST.json.gz");
  for (ReducePolicy policy : {ReducePolicy::ASYNC, ReducePolicy::INLINE}) {
    const GraphPrograms cf = counterfactual_programs(l.job, l.traced, policy, l.notes);
    EXPECT_TRUE(verify(cf.set).empty()) << to_string(policy);
    EXPECT_EQ(cf.set.policy, policy);
    // One REDUCE_GRAD per chunk on every rank, mapped to its chunk's grads-reduce-scatter.
    for (size_t q = 0; q < cf.set.programs.size(); ++q) {
      int n = 0;
      for (size_t i = 0; i < cf.set.programs[q].instrs.size(); ++i) {
        if (cf.set.programs[q].instrs[i].op != OpKind::REDUCE_GRAD) continue;
        ++n;
        EXPECT_EQ(cf.set.programs[q].instrs[i].stream, policy == ReducePolicy::ASYNC ? streams::kReduce : streams::kCompute);
        EXPECT_EQ(l.job.ops[static_cast<size_t>(cf.op_of[q][i])].type, OpType::GRADS_RS);
      }
      EXPECT_EQ(n, l.job.vpp);
    }
  }
  const GraphPrograms async = counterfactual_programs(l.job, l.traced, ReducePolicy::ASYNC, l.notes);
  const auto rg = [](const Program& p) {
    return std::find_if(p.instrs.begin(), p.instrs.end(), [](const Instr& i) { return i.op == OpKind::REDUCE_GRAD; });
  };
  {  // reduce-once: a rank without its reduction
    ProgramSet s = async.set;
    s.programs[1].instrs.erase(rg(s.programs[1]));
    EXPECT_TRUE(has_rule(verify(s), "reduce-once"));
  }
  {  // drain: the WAITs before the first consumer of the reductions dropped
    ProgramSet s = async.set;
    auto& in = s.programs[2].instrs;
    in.erase(std::remove_if(in.begin(), in.end(),
                            [&](const Instr& i) {
                              return i.op == OpKind::WAIT && i.stream != streams::kReduce &&
                                     s.programs[2].event_name(i.event).rfind("reduce_done", 0) == 0;
                            }),
             in.end());
    EXPECT_TRUE(has_rule(verify(s), "drain"));
  }
  {  // send-before-reduce: the inline placement (reduction on compute before the send) called async
    ProgramSet s = counterfactual_programs(l.job, l.traced, ReducePolicy::INLINE, l.notes).set;
    s.policy = ReducePolicy::ASYNC;
    EXPECT_TRUE(has_rule(verify(s), "send-before-reduce"));
  }
}

TEST(CounterfactualPass, RefusesAChunkWithTwoReductions) {
  Lifted l = lift("timeline-ST.json.gz");
  for (TemplateOp& op : l.job.ops)
    if (op.type == OpType::GC) op.type = OpType::GRADS_RS;  // a second reduce-scatter of chunk 0 (gc's chunk)
  EXPECT_THROW(counterfactual_programs(l.job, l.traced, ReducePolicy::ASYNC, l.notes), LiftError);
}

}  // namespace
}  // namespace ppstream::whatif
