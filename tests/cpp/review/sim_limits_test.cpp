// Review regressions for `ppstream simulate`: costs that are each finite but whose step time
// overflows a double (was: step_time_ms inf, bubble -nan printed with exit 0, and --svg hung in
// its axis-tick loop), and straggler tails naming members or stages outside the world (were
// silently ignored, or wrapped into another rank by the int32 cast).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "ppstream/config/config.h"
#include "ppstream/engine/engine.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/sim/straggler.h"
#include "ppstream/sim/trace.h"

namespace ppstream::sim {
namespace {

// PP2 x VPP1, 2 microbatches, 2 layers: 1e306 ms per forward layer, 4 forwards on the
// critical path and backward 2e306 each: the sum passes DBL_MAX (~1.8e308).
PipelineConfig huge_costs() {
  return load_config_text(R"(
pipeline_parallel_size: 2
micro_batch_num: 2
num_layers: 2
data_parallel: {mode: hsdp, shard_size: 1, replicate_size: 2}
cost: {forward_ms_per_layer: 1.0e306, backward_ms_per_layer: 1.0e308}
)",
                          "huge.yaml");
}

std::string error_of(const PipelineConfig& cfg, const SimOptions& o) {
  try {
    simulate(cfg, o);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ReviewSimLimits, OverflowingStepTimeIsAnError) {
  SimOptions o;
  EXPECT_EQ(error_of(huge_costs(), o),
            "simulate: inline step time is inf ms: the cost section's times add up beyond a double (the largest: the "
            "backward time of stage s0 = 1e+308 ms, from cost.backward_ms_per_layer = 1e+308); expected costs whose "
            "step stays finite");
  o.svg_path = ::testing::TempDir() + "/review_huge.svg";  // was an endless loop
  EXPECT_NE(error_of(huge_costs(), o).find("step time is inf ms"), std::string::npos);
}

TEST(ReviewSimLimits, OverflowingCostNamesItsKey) {
  // Issue 20: collective_alpha_ms 1e308 makes a collective inf ms; the error named only
  // "collective_ms of r0 #0 ... is inf ms". Shard 1, replicate 2: REDUCE_GRAD s0 is the all-reduce
  // over 2 replicas, 2·(2-1)·1e308 ms = inf (the per-layer compute times stay finite).
  PipelineConfig cfg = huge_costs();
  apply_override(cfg, "cost.collective_alpha_ms", "1.0e308");
  try {
    simulate(cfg, SimOptions{});
    ADD_FAILURE() << "no error";
  } catch (const CostOverflow& e) {
    EXPECT_EQ(std::string(e.what()),
              "simulate: REDUCE_GRAD s0's time (ring reduce-scatter + all-reduce) is inf ms: cost.collective_alpha_ms = "
              "1e+308 makes it overflow a double; expected cost values whose times stay finite (docs/simulate.md)");
    EXPECT_EQ(e.keys, std::vector<std::string>{"cost.collective_alpha_ms"});
  }
}

TEST(ReviewSimLimits, SvgRefusesANonFiniteSpan) {
  ProgramSet set;
  EngineResult run;
  run.makespan_ms = std::numeric_limits<double>::infinity();
  EXPECT_THROW(render_svg({SvgPanel{"x", &set, &run}}), std::invalid_argument);
}

std::string straggler_error(const std::string& text) {
  try {
    parse_straggler_spec(text, World{4, 2, 32, 128, false}, 8);  // the seed: 16,384 ranks, 8 stages
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ReviewSimLimits, StragglerTailsOutsideTheWorldAreErrors) {
  // Each was accepted and then matched nothing: the user's straggler silently vanished.
  EXPECT_NE(straggler_error("tails: [{pp_rank: 9, dp_index: 0, delay_ms: 1}]\n").find("expected a PP rank below 4"),
            std::string::npos);
  EXPECT_NE(straggler_error("tails: [{ranks: [99999999], delay_ms: 1}]\n")
                .find("expected a global rank (pp 4 x dp 4096) below 16384"),
            std::string::npos);
  EXPECT_NE(straggler_error("tails: [{ranks: [3], delay_ms: 1, stages: [99]}]\n").find("expected a virtual stage id below 8"),
            std::string::npos);
  // 2^32 + 5 used to wrap to rank 5 through the int32 cast.
  EXPECT_NE(straggler_error("tails: [{ranks: [4294967301], delay_ms: 1}]\n").find("tails[0].ranks"), std::string::npos);
  // The edges of the world are fine.
  const StragglerSpec ok = parse_straggler_spec("tails: [{ranks: [16383], delay_ms: 1, stages: [7]}, {pp_rank: 3, dp_index: 4095, delay_ms: 2}]\n",
                                                World{4, 2, 32, 128, false}, 8);
  ASSERT_EQ(ok.tails.size(), 2u);
  EXPECT_EQ(ok.tails[1].ranks, std::vector<int32_t>{3 * 4096 + 4095});
}

TEST(ReviewSimLimits, SimulateChecksTailsAgainstTheConfigWorld) {
  PipelineConfig cfg = huge_costs();
  apply_override(cfg, "cost.backward_ms_per_layer", "2");
  apply_override(cfg, "cost.forward_ms_per_layer", "1");
  apply_override(cfg, "straggler.tails", "[{pp_rank: 2, dp_index: 0, delay_ms: 5}]");  // pp is 2
  EXPECT_NE(error_of(cfg, {}).find("straggler.tails[0].pp_rank=2"), std::string::npos) << error_of(cfg, {});
}

}  // namespace
}  // namespace ppstream::sim
