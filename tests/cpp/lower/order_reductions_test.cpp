// Pass order-reductions (reduce_order: priority): a rank's async reductions queue on the
// reduction stream largest first, after the last of their sends; the programs still verify,
// and program order (the default) is the place-reductions order.
#include <gtest/gtest.h>

#include "ppstream/config/config.h"
#include "ppstream/lower/lower.h"
#include "ppstream/verify/verify.h"

namespace ppstream {
namespace {

// PP2 x VPP2: rank 0 holds s0 (3 layers) and s2 (1 layer); its backward finishes s2 first, so
// program order queues s2 then s0; priority queues s0 (more layers) first.
PipelineConfig cfg(const char* order) {
  return load_config_text(std::string(R"(
pipeline_parallel_size: 2
pipeline_parallel_interleave_num: 2
pipeline_parallel_layers_per_stage: ["0-2,5-5", "3-4,6-7"]
micro_batch_num: 4
schedule: interleaved_1f1b
data_parallel: {mode: hsdp, shard_size: 2, replicate_size: 2, reduce_grad: async, sync_last_reduce: false, reduce_order: )") +
                              order + "}\n",
                          "test");
}

std::vector<int32_t> reduce_stream_order(const Program& p) {
  std::vector<int32_t> out;
  for (const Instr& i : p.instrs)
    if (i.op == OpKind::REDUCE_GRAD && i.stream == streams::kReduce) out.push_back(i.stage.v);
  return out;
}

TEST(OrderReductions, PriorityQueuesTheLargestFirstAndVerifies) {
  const ProgramSet program = compile(cfg("program"));
  const ProgramSet priority = compile(cfg("priority"));
  EXPECT_EQ(reduce_stream_order(program.programs[0]), (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(reduce_stream_order(priority.programs[0]), (std::vector<int32_t>{0, 2}));
  // Rank 1: s1 (2 layers) and s3 (2 layers) tie: stage order.
  EXPECT_EQ(reduce_stream_order(priority.programs[1]), (std::vector<int32_t>{1, 3}));
  VerifyOptions vo;
  vo.platforms = parse_platform_list("all");
  EXPECT_TRUE(verify(priority, vo).empty());
  // Same instructions, other order.
  EXPECT_EQ(priority.programs[0].instrs.size(), program.programs[0].instrs.size());
  EXPECT_NE(priority.programs[0].instrs, program.programs[0].instrs);
}

TEST(OrderReductions, KeyIsCheckedAndRoundTrips) {
  EXPECT_THROW(cfg("largest"), ConfigError);
  const PipelineConfig c = cfg("priority");
  EXPECT_EQ(load_config_text(to_yaml(c)).reduce_order, ReduceOrder::PRIORITY);
  EXPECT_THROW(load_config_text("pipeline_parallel_size: 2\nnum_layers: 2\ndata_parallel: {reduce_order: priority}\n"),
               ConfigError);
}

}  // namespace
}  // namespace ppstream
