// Communicator order (docs/semantics.md "Communicators"): collectives a rank issues on one
// communicator run one after another in issue order, across all of its streams — in the
// engine's `strict` profile, on the rank's one communication stream of
// `ascend-mindspore-one-comm-stream`, and as the verifier rule `communicator-order`. The
// `ascend-mindspore` profile gives each program stream its own groups (the runtime's CommPlan),
// so there the two reductions are independent.
// The issue's repro: async reductions with sync_last_reduce put the last stage's reduction on
// compute while an earlier one still runs on `reduce`, in the same replicate group.
#include <gtest/gtest.h>

#include <string>

#include "ppstream/config/config.h"
#include "ppstream/engine/engine.h"
#include "ppstream/lower/lower.h"
#include "ppstream/program/format.h"
#include "ppstream/sim/cost_model.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/verify/verify.h"
#include "racing_reductions.h"

namespace ppstream {
namespace {

// F = 1 ms, B = 2 ms, every collective 30 ms.
class Cost30 : public CostModel {
 public:
  double compute_ms(const Program&, const Instr& i) const override {
    return i.op == OpKind::F ? 1.0 : i.op == OpKind::B ? 2.0 : 0.0;
  }
  double collective_ms(const Program&, const Instr&) const override { return 30.0; }
};

// One rank, two local stages, replicate 2 (racing_reductions.h).
std::string racing(bool expanded) { return testing::racing_reductions(1, 2, expanded); }

EngineResult run(const ProgramSet& set, const CostModel& cost,
                 PlatformKind platform = PlatformKind::ASCEND_MINDSPORE) {
  EngineOptions o;
  o.platform = platform;
  o.cost = &cost;
  return run_engine(set, o);
}

// F s0 [0,1], F s1 [1,2], B s1 [2,4]; reduce: REDUCE_GRAD s1 [4,34]; B s0 [4,6]; compute's
// REDUCE_GRAD s0 is at its head at 6. On one communication stream it waits until 34: [34,64].
// With the runtime's groups per program stream (ascend-mindspore) the two are independent: [6,36].
TEST(Communicator, CollectivesFromTwoStreamsSerializeOnOneCommStreamOnly) {
  for (bool expanded : {false, true}) {
    const ProgramSet set = parse_program_set(racing(expanded));
    const Cost30 cost;
    const EngineResult r = run(set, cost, PlatformKind::ASCEND_ONE_COMM_STREAM);
    ASSERT_TRUE(r.completed) << format_deadlock(set, r);
    EXPECT_DOUBLE_EQ(r.timing[0][5].end_ms, 34.0) << "expanded=" << expanded;
    EXPECT_DOUBLE_EQ(r.timing[0][8].start_ms, 6.0) << "expanded=" << expanded;
    EXPECT_DOUBLE_EQ(r.timing[0][8].end_ms, 64.0) << "expanded=" << expanded;
    EXPECT_DOUBLE_EQ(r.makespan_ms, 64.0) << "expanded=" << expanded;
    const EngineResult g = run(set, cost);
    ASSERT_TRUE(g.completed) << format_deadlock(set, g);
    EXPECT_DOUBLE_EQ(g.timing[0][5].end_ms, 34.0) << "expanded=" << expanded;
    EXPECT_DOUBLE_EQ(g.timing[0][8].end_ms, 36.0) << "expanded=" << expanded;
  }
}

TEST(Communicator, VerifierFlagsCollectivesOnOneGroupFromTwoStreamsWithoutOrder) {
  const auto v = verify(parse_program_set(racing(false)));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, "communicator-order");
  EXPECT_EQ(v[0].to_string(),
            "verify: r0 #8 compute: [communicator-order] REDUCE_GRAD s0 and REDUCE_GRAD s1 (#5 reduce) run on the "
            "same replicate-group communicator from different streams with no RECORD/WAIT chain between them; the "
            "communicator runs them in issue order, so this one silently waits for the other: order them with an "
            "event");
  // Ordered by the drain's event: valid, and the same serialized step.
  std::string fixed = racing(false);
  const std::string a = "r0 compute REDUCE_GRAD s0\nr0 compute WAIT reduce_done[s1]\n";
  fixed.replace(fixed.find(a), a.size(), "r0 compute WAIT reduce_done[s1]\nr0 compute REDUCE_GRAD s0\n");
  const ProgramSet set = parse_program_set(fixed);
  EXPECT_TRUE(verify(set).empty());
  EXPECT_DOUBLE_EQ(run(set, Cost30{}).makespan_ms, 64.0);
}

// The earlier collective waits (through an event) for compute work issued after the later one:
// real NCCL/HCCL with one communicator per group hang here, and so does the engine (strict),
// naming the communicator; so does one communication stream. The runtime's separate groups per
// program stream (ascend-mindspore) do not.
TEST(Communicator, HeldBackCollectiveThatFeedsTheEarlierOneDeadlocks) {
  const ProgramSet set = parse_program_set(R"(world pp=1 vpp=2 shard=1 replicate=2 expanded=0 mode=hsdp policy=async
r0 compute F mb0 s0
r0 compute F mb0 s1
r0 compute B mb0 s1
r0 reduce WAIT compute_ready[s1]
r0 reduce REDUCE_GRAD s1
r0 reduce RECORD reduce_done[s1]
r0 compute REDUCE_GRAD s0
r0 compute RECORD compute_ready[s1]
r0 compute B mb0 s0
r0 compute WAIT reduce_done[s1]
r0 compute OPT_STEP
)");
  const EngineResult r = run(set, Cost30{}, PlatformKind::STRICT);
  ASSERT_FALSE(r.completed);
  const std::string report = format_deadlock(set, r);
  EXPECT_NE(report.find("r0 #6 compute REDUCE_GRAD s0\n      waiting for communicator order: r0 #4 reduce REDUCE_GRAD s1"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("cycle:"), std::string::npos) << report;
  const EngineResult one = run(set, Cost30{}, PlatformKind::ASCEND_ONE_COMM_STREAM);
  ASSERT_FALSE(one.completed);
  const std::string one_report = format_deadlock(set, one);
  EXPECT_NE(one_report.find("r0 #6 compute REDUCE_GRAD s0\n      waiting for the rank's one communication stream: r0 #4 "
                            "reduce REDUCE_GRAD s1, issued earlier there, has not finished"),
            std::string::npos)
      << one_report;
  EXPECT_TRUE(run(set, Cost30{}).completed);
  bool flagged = false;
  for (const auto& v : verify(set))
    if (v.rule == "communicator-order" || v.rule == "deadlock") flagged = true;
  EXPECT_TRUE(flagged);
}

// The issue's repro through the lowering: PP2 × VPP2, 2 microbatches, HSDP shard 1 ×
// replicate 2, collective_alpha_ms 30 (all-reduce of 2 ranks = 2·alpha = 60 ms), async +
// sync_last_reduce. On every rank the compute-stream reduction of the last stage must begin
// only when the reduce-stream reduction on the same replicate group has finished.
TEST(Communicator, SyncLastReduceWaitsForTheEarlierReductionOnItsGroup) {
  const PipelineConfig cfg = load_config_text(R"(
pipeline_parallel_size: 2
pipeline_parallel_interleave_num: 2
pipeline_parallel_layers_per_stage: ["0-0,2-2", "1-1,3-3"]
micro_batch_num: 2
schedule: interleaved_1f1b
data_parallel: {mode: hsdp, shard_size: 1, replicate_size: 2, reduce_grad: async, sync_last_reduce: true}
cost: {collective_alpha_ms: 30}
)",
                                              "repro");
  for (bool expanded : {false, true}) {
    LowerOptions lo;
    lo.expanded = expanded;
    const ProgramSet set = compile(cfg, lo);
    EXPECT_TRUE(verify(set).empty());
    const sim::CostSpec spec = sim::parse_cost_spec("collective_alpha_ms: 30\n", cfg.num_stages());
    const sim::SimCostModel cost(set, cfg, spec, sim::StragglerModel({}, set.world));
    const EngineResult r = run(set, cost);
    ASSERT_TRUE(r.completed) << format_deadlock(set, r);
    for (size_t p = 0; p < set.programs.size(); ++p) {
      const auto& in = set.programs[p].instrs;
      double reduce_end = -1, compute_start_comm = -1;
      for (size_t k = 0; k < in.size(); ++k) {
        if (in[k].op != OpKind::REDUCE_GRAD) continue;
        if (in[k].stream == streams::kReduce) reduce_end = r.timing[p][k].end_ms;
        if (in[k].stream == streams::kCompute) compute_start_comm = r.timing[p][k].end_ms - 60.0;
      }
      ASSERT_GE(reduce_end, 0);
      ASSERT_GE(compute_start_comm, 0);
      EXPECT_GE(compute_start_comm, reduce_end) << "r" << set.programs[p].rank.v << " expanded=" << expanded;
    }
  }
}

}  // namespace
}  // namespace ppstream
