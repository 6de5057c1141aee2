// A straggler tail that can never fire is refused naming its key (breaker5 F8): a `stages:`
// entry on none of the tail's members' PP ranks (under the schedule's placement), any tail under
// data_parallel.mode none, an unshard-only tail with shard_size 1. And simulate's text table
// labels step_time_ms as trial 0's when it runs several trials (F18).
#include <gtest/gtest.h>

#include <string>

#include "ppstream/config/config.h"
#include "ppstream/sim/simulate.h"

namespace ppstream::sim {
namespace {

// PP 4 x VPP 2 (LOOP: PP rank 1 holds stages 1 and 5), HSDP 2 x 2.
PipelineConfig job(const std::string& extra, const std::string& dp = "{mode: hsdp, shard_size: 2, replicate_size: 2}",
                   const std::string& schedule = "interleaved_1f1b", int pp = 4) {
  return load_config_text("pipeline_parallel_size: " + std::to_string(pp) +
                              "\npipeline_parallel_interleave_num: 2\nmicro_batch_num: 8\nnum_layers: 8\nschedule: " + schedule +
                              "\ndata_parallel: " + dp +
                              "\ncost: {forward_ms_per_layer: 1, backward_ms_per_layer: 2, grad_bytes_per_layer: 1.0e8}\n" + extra,
                          "test");
}

std::string refusal(const PipelineConfig& cfg, bool cluster = false) {
  SimOptions o;
  o.cluster = cluster;
  try {
    simulate(cfg, o);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(StragglerReach, AStageOffTheMembersPpRankIsRefusedNamingWhereItLives) {
  const PipelineConfig cfg = job("straggler: {tails: [{pp_rank: 1, dp_index: 1, delay_ms: 150, stages: [3]}]}\n");
  for (const bool cluster : {false, true})
    EXPECT_EQ(refusal(cfg, cluster),
              "config: straggler.tails[0].stages=3: stage 3 lives on PP rank 3, not pp_rank 1 (PP rank 1 holds 1, 5); the "
              "tail can never fire there (schedule interleaved_1f1b)")
        << cluster;
  // A stage PP rank 1 holds runs.
  EXPECT_EQ(refusal(job("straggler: {tails: [{pp_rank: 1, dp_index: 1, delay_ms: 150, stages: [5]}]}\n")), "accepted");
}

TEST(StragglerReach, RanksTailsAreCheckedAgainstEveryMembersPpRank) {
  // Global rank = pp_rank * 4 + dp_index: ranks 5 and 9 are on PP ranks 1 and 2 (stages 1, 5 and 2, 6).
  EXPECT_EQ(refusal(job("straggler: {tails: [{ranks: [0], delay_ms: 1}, {ranks: [5, 9], delay_ms: 9, stages: [6, 7]}]}\n")),
            "config: straggler.tails[1].stages=7: stage 7 lives on PP rank 3, not pp_rank 1 or 2 (PP rank 1 holds 1, 5; "
            "PP rank 2 holds 2, 6); the tail can never fire there (schedule interleaved_1f1b)");
  EXPECT_EQ(refusal(job("straggler: {tails: [{ranks: [5, 9], delay_ms: 9, stages: [5, 6]}]}\n")), "accepted");
}

TEST(StragglerReach, TheScheduleDecidesThePlacement) {
  // ZBV, PP 2: PP rank 1 holds stages 1 and 2 (V), not 1 and 3 (LOOP).
  const std::string dp = "{mode: fsdp, shard_size: 2}";
  EXPECT_EQ(refusal(job("straggler: {tails: [{pp_rank: 1, dp_index: 1, delay_ms: 5, stages: [2]}]}\n", dp, "zbv", 2)), "accepted");
  EXPECT_EQ(refusal(job("straggler: {tails: [{pp_rank: 1, dp_index: 1, delay_ms: 5, stages: [3]}]}\n", dp, "zbv", 2)),
            "config: straggler.tails[0].stages=3: stage 3 lives on PP rank 0, not pp_rank 1 (PP rank 1 holds 1, 2); the "
            "tail can never fire there (schedule zbv)");
}

TEST(StragglerReach, NoDataParallelismOrNothingUnshardedIsRefused) {
  EXPECT_EQ(refusal(load_config_text("pipeline_parallel_size: 4\nnum_layers: 8\nmicro_batch_num: 8\n"
                                     "straggler: {tails: [{pp_rank: 2, dp_index: 0, delay_ms: 500}]}\n",
                                     "test")),
            "config: straggler.tails[0]: data_parallel.mode is none, so the job has no reduce_grad or unshard collective for "
            "the tail to delay; it can never fire (drop the tail, or give data_parallel.mode fsdp / hsdp)");
  const std::string ddp = "{mode: hsdp, shard_size: 1, replicate_size: 4}";
  EXPECT_EQ(refusal(job("straggler: {tails: [{pp_rank: 1, dp_index: 1, delay_ms: 500, collectives: [unshard]}]}\n", ddp)),
            "config: straggler.tails[0].collectives=[unshard]: data_parallel.shard_size is 1, so nothing is unsharded and "
            "the tail can never fire (use reduce_grad, or a shard_size above 1)");
  // reduce_grad still runs there.
  EXPECT_EQ(refusal(job("straggler: {tails: [{pp_rank: 1, dp_index: 1, delay_ms: 500}]}\n", ddp)), "accepted");
  EXPECT_EQ(refusal(job("straggler: {tails: [{pp_rank: 1, dp_index: 1, delay_ms: 500, collectives: [unshard]}]}\n")), "accepted");
}

TEST(StragglerReach, SeveralTrialsLabelStepTimeAsTrialZeros) {
  const PipelineConfig cfg =
      job("straggler: {distribution: {kind: lognormal, median_ms: 2, sigma: 1.5, collectives: [reduce_grad]}}\n");
  SimOptions o;
  o.trials = 4;
  const std::string text = report_table(simulate(cfg, o));
  EXPECT_NE(text.find("\nstep_time_ms (trial 0) "), std::string::npos) << text;
  EXPECT_NE(text.find("\nstep_time_p50_ms "), std::string::npos) << text;
  o.trials = 1;
  const std::string one = report_table(simulate(cfg, o));
  EXPECT_NE(one.find("\nstep_time_ms "), std::string::npos) << one;
  EXPECT_EQ(one.find("(trial 0)"), std::string::npos) << one;
}

}  // namespace
}  // namespace ppstream::sim
