// V placement (ir.h Placement::V; zbv and dualpipev): the stage → rank map, config rules and
// layer strings, lowering (no P2P between stages pp-1 and pp, which share the last rank), the
// verifier's acceptance of that local transfer and refusal of a P2P op to a local stage, and
// the text/JSON round trip of the placement.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "ppstream/config/config.h"
#include "ppstream/lower/lower.h"
#include "ppstream/program/format.h"
#include "ppstream/schedule/schedule.h"
#include "ppstream/verify/verify.h"

namespace ppstream {
namespace {

PipelineConfig v_config(const std::string& schedule, int32_t m, const std::string& extra = "") {
  return load_config_text("pipeline_parallel_size: 4\npipeline_parallel_interleave_num: 2\nmicro_batch_num: " +
                              std::to_string(m) + "\nschedule: " + schedule +
                              "\npipeline_parallel_layers_per_stage: [\"0-1,14-15\", \"2-3,12-13\", \"4-5,10-11\", \"6-7,8-9\"]\n" +
                              extra,
                          "v.yaml");
}

TEST(VPlacement, StageToRankMap) {
  const World w{4, 2, 1, 1, false, Placement::V};
  std::vector<int32_t> ranks;
  for (int32_t s = 0; s < 8; ++s) ranks.push_back(pp_rank_of_stage(Stage{s}, w));
  EXPECT_EQ(ranks, (std::vector<int32_t>{0, 1, 2, 3, 3, 2, 1, 0}));
  EXPECT_EQ(local_stages(1, w), (std::vector<Stage>{Stage{1}, Stage{6}}));
  EXPECT_EQ(local_stages(1, World{4, 2}), (std::vector<Stage>{Stage{1}, Stage{5}}));
  EXPECT_EQ(pp_rank_of_stage(Stage{7}, 4, Placement::LOOP), 3);
  EXPECT_TRUE(world_size_error(World{4, 3, 1, 1, false, Placement::V}).has_value());
  EXPECT_FALSE(world_size_error(w).has_value());
}

TEST(VPlacement, LayerStringsListTheRanksStagesInStageOrder) {
  const PipelineConfig c = v_config("zbv", 8);
  EXPECT_EQ(c.placement(), Placement::V);
  EXPECT_EQ(c.world(false).placement, Placement::V);
  ASSERT_EQ(c.stage_layers.size(), 8u);
  for (int32_t s = 0; s < 8; ++s) EXPECT_EQ(c.stage_layers[static_cast<size_t>(s)], (LayerRange{2 * s, 2 * s + 1})) << s;
  // Written back in the same per-rank form.
  EXPECT_EQ(load_config_text(to_yaml(c)).stage_layers, c.stage_layers);
  // The loop placement's strings do not tile the layers in stage order under V.
  try {
    load_config_text("pipeline_parallel_size: 2\npipeline_parallel_interleave_num: 2\nmicro_batch_num: 4\n"
                     "schedule: zbv\npipeline_parallel_layers_per_stage: [\"0-0,2-2\", \"1-1,3-3\"]\n");
    ADD_FAILURE() << "loop-style layer strings accepted for zbv";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("stage 1 (rank 1"), std::string::npos) << e.what();
  }
}

TEST(VPlacement, ConfigRulesNameTheFix) {
  auto error_of = [](const std::string& yaml) {
    try {
      load_config_text(yaml, "c.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string vpp3 = error_of("pipeline_parallel_size: 2\npipeline_parallel_interleave_num: 3\nmicro_batch_num: 4\n"
                                    "num_layers: 6\nschedule: zbv\n");
  EXPECT_NE(vpp3.find("exactly 2 virtual stages"), std::string::npos) << vpp3;
  EXPECT_NE(vpp3.find("pipeline_parallel_interleave_num: 2"), std::string::npos) << vpp3;
  const std::string few = error_of("pipeline_parallel_size: 4\npipeline_parallel_interleave_num: 2\nmicro_batch_num: 7\n"
                                   "num_layers: 8\nschedule: dualpipev\n");
  EXPECT_NE(few.find("micro_batch_num=7"), std::string::npos) << few;
  EXPECT_NE(few.find("use 8 or more"), std::string::npos) << few;
  EXPECT_EQ(error_of("pipeline_parallel_size: 4\npipeline_parallel_interleave_num: 2\nmicro_batch_num: 8\n"
                     "num_layers: 8\nschedule: dualpipev\n"),
            "accepted");
}

TEST(VPlacement, NoP2PBetweenTheTwoStagesOfTheLastRankAndTheSetVerifies) {
  for (const char* sched : {"zbv", "dualpipev"}) {
    SCOPED_TRACE(sched);
    const ProgramSet set = compile(v_config(sched, 8, "data_parallel:\n  mode: fsdp\n  shard_size: 2\n  reduce_grad: async\n"));
    EXPECT_EQ(set.world.placement, Placement::V);
    int batches_of_rank3 = 0;
    for (const Program& p : set.programs)
      for (const Instr& i : p.instrs)
        for (const P2POp& op : i.p2p) {
          const int32_t other = mirror_of(op, p.rank).stage.v;
          EXPECT_NE(pp_rank_of_stage(Stage{other}, set.world), p.pp_rank) << to_line(p, i);
          EXPECT_EQ(op.peer.v, pp_rank_of_stage(Stage{other}, set.world)) << to_line(p, i);
          batches_of_rank3 += p.pp_rank == 3;
        }
    EXPECT_GT(batches_of_rank3, 0);
    const auto violations = verify(set);
    EXPECT_TRUE(violations.empty()) << violations.front().to_string();
    // Round trips keep the placement.
    EXPECT_NE(to_text(set).find("placement=v"), std::string::npos);
    EXPECT_EQ(parse_program_set(to_text(set)), set);
    EXPECT_EQ(parse_json(to_json(set)), set);
  }
}

TEST(VPlacement, ProgramTextNamesABadPlacement) {
  EXPECT_EQ(parse_program_set("world pp=2 vpp=2 shard=1 replicate=1 placement=v expanded=0 mode=none policy=none\n")
                .world.placement,
            Placement::V);
  EXPECT_EQ(parse_program_set("world pp=2 vpp=2 shard=1 replicate=1 expanded=0 mode=none policy=none\n").world.placement,
            Placement::LOOP);
  try {
    parse_program_set("world pp=2 vpp=2 shard=1 replicate=1 placement=w expanded=0 mode=none policy=none\n", "p.txt");
    ADD_FAILURE() << "placement=w accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("p.txt:1: expected placement=loop|v, got 'placement=w'"), std::string::npos) << e.what();
  }
  try {
    parse_program_set("world pp=2 vpp=3 shard=1 replicate=1 placement=v expanded=0 mode=none policy=none\n", "p.txt");
    ADD_FAILURE() << "V placement with vpp 3 accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("exactly 2 virtual stages per rank"), std::string::npos) << e.what();
  }
}

TEST(VPlacement, AP2POpToAStageOfTheSameRankIsRejected) {
  ProgramSet set = compile(v_config("zbv", 8));
  // Rank 3 sends s3's activation to s4 — which it holds itself.
  Program& r3 = set.programs[3];
  const auto f = std::find_if(r3.instrs.begin(), r3.instrs.end(), [](const Instr& i) { return i.op == OpKind::F && i.stage.v == 3; });
  ASSERT_NE(f, r3.instrs.end());
  Instr b;
  b.op = OpKind::BATCH;
  b.stream = streams::kCompute;
  b.p2p = {{P2PKind::SEND_F, f->mb, Stage{3}, Rank{3}}};
  r3.instrs.insert(f + 1, b);
  const auto violations = verify(set);
  ASSERT_FALSE(violations.empty());
  std::string all;
  for (const auto& v : violations) all += v.to_string() + "\n";
  EXPECT_NE(all.find("lives on this rank too (v placement)"), std::string::npos) << all;
}

TEST(VPlacement, UnitTimeChecksThePlacement) {
  const ComputeOrder zbv = schedule_zbv(4, 8);
  EXPECT_NO_THROW(simulate_unit_time(zbv, Placement::V));
  EXPECT_THROW(simulate_unit_time(zbv, Placement::LOOP), std::invalid_argument);
  // Every rank runs its two stages, 3 actions (F, I, W) per microbatch each.
  for (const auto& actions : zbv) EXPECT_EQ(actions.size(), 2u * 3u * 8u);
  const ComputeOrder dpv = schedule_dualpipev(4, 8);
  EXPECT_NO_THROW(simulate_unit_time(dpv, Placement::V));
  EXPECT_THROW(schedule_dualpipev(4, 7), std::invalid_argument);
}

// Measured, not a published formula (docs/schedules.md): with one slot per F, I and W of a chunk
// and free P2P, ZBV's step is 6m + p - 1 slots — the same as interleaved_zb at v = 2.
TEST(VPlacement, ZbvUnitTimeStep) {
  for (int32_t p : {2, 4, 8})
    for (int32_t m : {2 * p, 4 * p}) {
      EXPECT_EQ(simulate_unit_time(schedule_zbv(p, m), Placement::V).makespan, 6 * m + p - 1) << p << " " << m;
      EXPECT_EQ(simulate_unit_time(schedule_interleaved_zb(p, 2, m)).makespan, 6 * m + p - 1) << p << " " << m;
    }
}

}  // namespace
}  // namespace ppstream
