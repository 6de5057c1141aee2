// Config loader tests: the examples parse to hand-derived stage layers, every rule rejects its
// bad case with a message naming key, value and rule, and overrides are revalidated.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <string>

#include "ppstream/config/config.h"

namespace ppstream {
namespace {

const std::string kExamples = std::string(PPSTREAM_SOURCE_DIR) + "/examples/";

// The seed's core keys, one per line, so that tests can swap single lines.
std::string seed_text(const std::string& layers = R"(["0-5,24-29", "6-11,30-35", "12-17,36-41", "18-23,42-44"])",
                      const std::string& extra = "") {
  return "pipeline_parallel_size: 4\n"
         "pipeline_parallel_interleave_num: 2\n"
         "pipeline_parallel_layers_per_stage: " + layers + "\n"
         "micro_batch_num: 16\n" + extra;
}

std::string seed_with_micro(const std::string& m) {
  std::string t = seed_text();
  return t.replace(t.find("micro_batch_num: 16"), 19, "micro_batch_num: " + m);
}

// Loads `yaml` expecting a ConfigError whose message contains every one of `parts`.
void expect_error(const std::string& yaml, std::initializer_list<std::string> parts) {
  try {
    load_config_text(yaml, "t.yaml");
    ADD_FAILURE() << "accepted:\n" << yaml;
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("config: ", 0), 0u) << msg;
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing [" << p << "] in: " << msg;
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ConfigExamples, SeedParsesToTheUsersStages) {
  const PipelineConfig c = load_config_file(kExamples + "seed-pp4-vpp2-hsdp.yaml");
  EXPECT_EQ(c.pipeline_parallel_size, 4);
  EXPECT_EQ(c.pipeline_parallel_interleave_num, 2);
  EXPECT_EQ(c.micro_batch_num, 16);
  EXPECT_EQ(c.num_layers, 45);  // derived from the strings: 0-44
  // Rank r's i-th range is stage i*4 + r.
  const std::vector<LayerRange> expected = {{0, 5},   {6, 11},  {12, 17}, {18, 23},
                                            {24, 29}, {30, 35}, {36, 41}, {42, 44}};
  EXPECT_EQ(c.stage_layers, expected);
  EXPECT_EQ(c.stage_layers[7].count(), 3);
  EXPECT_EQ(c.stage_layers[4], (LayerRange{24, 29}));
  EXPECT_TRUE(c.pipeline_parallel_overlap_p2p);
  EXPECT_TRUE(c.pipeline_parallel_overlap_b_f);
  EXPECT_EQ(c.pipeline_parallel_p2p_transport, P2PTransport::MULTI_STREAM);
  EXPECT_EQ(c.schedule, ScheduleKind::INTERLEAVED_1F1B);
  EXPECT_EQ(c.mode, DPMode::HSDP);
  EXPECT_EQ(c.shard_size, 32);
  EXPECT_EQ(c.replicate_size, 128);
  EXPECT_TRUE(c.reshard_after_backward);
  EXPECT_EQ(c.reduce_grad, ReducePolicy::ASYNC);
  EXPECT_TRUE(c.sync_last_reduce);
  EXPECT_EQ(c.max_active_stages, 0);
  EXPECT_EQ(c.active_stage_limit(), 2);
  EXPECT_EQ(c.world(false), (World{4, 2, 32, 128, false}));
  EXPECT_EQ(c.world(true), (World{4, 2, 32, 128, true}));
  EXPECT_EQ(c.world(true).dp(), 4096);
  EXPECT_TRUE(c.extra_sections.empty());
}

TEST(ConfigExamples, SmallFsdpEvenSplit) {
  const PipelineConfig c = load_config_file(kExamples + "small-pp2-vpp2-fsdp.yaml");
  const std::vector<LayerRange> expected = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  EXPECT_EQ(c.stage_layers, expected);
  EXPECT_TRUE(c.layers_per_stage.empty());
  EXPECT_EQ(c.mode, DPMode::FSDP);
  EXPECT_EQ(c.world(false), (World{2, 2, 4, 1, false}));
  EXPECT_EQ(c.micro_batch_num, 8);
}

TEST(ConfigExamples, SmallHsdpExplicitLayers) {
  const PipelineConfig c = load_config_file(kExamples + "small-pp2-vpp2-hsdp.yaml");
  const std::vector<LayerRange> expected = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  EXPECT_EQ(c.stage_layers, expected);
  EXPECT_EQ(c.num_layers, 8);
  EXPECT_EQ(c.world(true), (World{2, 2, 2, 2, true}));
  EXPECT_EQ(c.reduce_grad, ReducePolicy::ASYNC);
}

TEST(ConfigDefaults, MinimalConfig) {
  const PipelineConfig c = load_config_text("pipeline_parallel_size: 4\nnum_layers: 8\n");
  EXPECT_EQ(c.pipeline_parallel_interleave_num, 1);
  EXPECT_EQ(c.micro_batch_num, 1);
  EXPECT_EQ(c.schedule, ScheduleKind::ONE_F_ONE_B);
  EXPECT_EQ(c.pipeline_parallel_p2p_transport, P2PTransport::BATCH);
  EXPECT_FALSE(c.pipeline_parallel_overlap_p2p);
  EXPECT_EQ(c.mode, DPMode::NONE);
  EXPECT_EQ(c.reduce_grad, ReducePolicy::NONE);
  EXPECT_EQ(c.world(false), (World{4, 1, 1, 1, false}));
}

TEST(ConfigDefaults, InterleavedWhenVirtualStages) {
  const PipelineConfig c = load_config_text(seed_text());
  EXPECT_EQ(c.schedule, ScheduleKind::INTERLEAVED_1F1B);
}

TEST(ConfigDefaults, DataParallelReduceInlineByDefault) {
  const PipelineConfig c = load_config_text(seed_text() + "data_parallel: {mode: hsdp, replicate_size: 4}\n");
  EXPECT_EQ(c.reduce_grad, ReducePolicy::INLINE);
  EXPECT_EQ(c.shard_size, 1);  // hsdp with shard 1 = plain data parallelism
  EXPECT_TRUE(c.sync_last_reduce);
  EXPECT_TRUE(c.reshard_after_backward);
}

// HSDP with one replica is FSDP (torchtitan's dp_replicate=1, FSDP's HYBRID_SHARD on one node):
// accepted, and the world — which is all lowering, engine and replay read — equals fsdp's.
TEST(ConfigDefaults, HsdpWithReplicateOneIsFsdp) {
  const PipelineConfig h = load_config_text(seed_text() + "data_parallel: {mode: hsdp, shard_size: 2, replicate_size: 1}\n");
  const PipelineConfig f = load_config_text(seed_text() + "data_parallel: {mode: fsdp, shard_size: 2}\n");
  EXPECT_EQ(h.world(true), f.world(true));
  EXPECT_EQ(h.world(true).dp(), 2);
}

TEST(ConfigDefaults, YamlBooleanSpellings) {
  const PipelineConfig c = load_config_text(seed_text() + "pipeline_parallel_overlap_p2p: True\n"
                                                          "pipeline_parallel_overlap_b_f: yes\n");
  EXPECT_TRUE(c.pipeline_parallel_overlap_p2p);
  EXPECT_TRUE(c.pipeline_parallel_overlap_b_f);
}

TEST(ConfigEvenSplit, FirstStagesGetTheRemainder) {
  // 45 layers over 8 stages: 45 = 8*5 + 5, so stages 0-4 hold 6 layers and 5-7 hold 5.
  const PipelineConfig c = load_config_text(
      "pipeline_parallel_size: 4\npipeline_parallel_interleave_num: 2\nnum_layers: 45\nmicro_batch_num: 8\n");
  const std::vector<LayerRange> expected = {{0, 5},   {6, 11},  {12, 17}, {18, 23},
                                            {24, 29}, {30, 34}, {35, 39}, {40, 44}};
  EXPECT_EQ(c.stage_layers, expected);
}

TEST(ConfigEvenSplit, OneLayerPerStage) {
  const PipelineConfig c = load_config_text("pipeline_parallel_size: 3\nnum_layers: 3\n");
  const std::vector<LayerRange> expected = {{0, 0}, {1, 1}, {2, 2}};
  EXPECT_EQ(c.stage_layers, expected);
}

TEST(ConfigLayerString, Parses) {
  EXPECT_EQ(parse_layer_string("0-5,24-29", "k"), (std::vector<LayerRange>{{0, 5}, {24, 29}}));
  EXPECT_EQ(parse_layer_string(" 3 , 7 - 9 ", "k"), (std::vector<LayerRange>{{3, 3}, {7, 9}}));
}

TEST(ConfigLayerString, RejectsBadText) {
  auto msg = [](const std::string& text) { return error_of([&] { parse_layer_string(text, "key[2]"); }); };
  EXPECT_NE(msg("6-x,30-35").find("key[2]=\"6-x,30-35\": \"6-x\" is not a layer range"), std::string::npos)
      << msg("6-x,30-35");
  EXPECT_NE(msg("11-6").find("range \"11-6\" has first layer 11 > last layer 6; write it as \"6-11\""),
            std::string::npos);
  EXPECT_NE(msg("").find("empty layer string"), std::string::npos);
  EXPECT_NE(msg("0-5,,6").find("empty range between commas"), std::string::npos);
  EXPECT_NE(msg("-3").find("\"-3\" is not a layer range"), std::string::npos);
  EXPECT_NE(msg("0-99999999999").find("is not a layer range"), std::string::npos);
  EXPECT_NE(msg("0-2147483647").find("layer 2147483647 in \"0-2147483647\" is beyond the limit of 16777216 layers"),
            std::string::npos)
      << msg("0-2147483647");
}

TEST(ConfigErrors, LayerRangesOverlap) {
  expect_error(seed_text(R"(["0-5,24-29", "5-11,30-35", "12-17,36-41", "18-23,42-44"])"),
               {"t.yaml:3: ", "pipeline_parallel_layers_per_stage[1]=\"5-11,30-35\"",
                "layer 5 is in both stage 0 (rank 0 chunk 0, layers 0-5) and stage 1", "exactly one stage"});
}

TEST(ConfigErrors, LayersMissing) {
  expect_error(seed_text(R"(["0-5,24-29", "7-11,30-35", "12-17,36-41", "18-23,42-44"])"),
               {"pipeline_parallel_layers_per_stage[1]=\"7-11,30-35\"", "layer 6 is in no stage",
                "every layer 0..44 must be in exactly one stage"});
  expect_error(seed_text(R"(["1-5,24-29", "6-11,30-35", "12-17,36-41", "18-23,42-44"])"),
               {"pipeline_parallel_layers_per_stage[0]=\"1-5,24-29\"", "layer 0 is in no stage"});
}

TEST(ConfigErrors, LayersOutOfStageOrder) {
  expect_error(seed_text(R"(["24-29,0-5", "6-11,30-35", "12-17,36-41", "18-23,42-44"])"),
               {"pipeline_parallel_layers_per_stage[0]=\"24-29,0-5\"",
                "stage 0 (rank 0 chunk 0, layers 24-29) must start at layer 0", "consecutive layers"});
  expect_error(seed_text(R"(["0-5,24-29", "12-17,30-35", "6-11,36-41", "18-23,42-44"])"),
               {"pipeline_parallel_layers_per_stage[1]=\"12-17,30-35\"",
                "stage 1 (rank 1 chunk 0, layers 12-17) must start at layer 6, right after stage 0"});
}

TEST(ConfigErrors, LayerStringCount) {
  expect_error(seed_text(R"(["0-5,24-29", "6-11,30-35", "12-17,36-44"])"),
               {"pipeline_parallel_layers_per_stage has 3 strings but pipeline_parallel_size=4",
                "one string per PP rank"});
}

TEST(ConfigErrors, RangesPerRankString) {
  expect_error(seed_text(R"(["0-5,24-29", "6-11,30-35", "12-17,36-41", "18-23"])"),
               {"pipeline_parallel_layers_per_stage[3]=\"18-23\"", "1 range but pipeline_parallel_interleave_num=2",
                "one range per virtual chunk"});
}

TEST(ConfigErrors, FirstAfterLast) {
  expect_error(seed_text(R"(["0-5,24-29", "11-6,30-35", "12-17,36-41", "18-23,42-44"])"),
               {"pipeline_parallel_layers_per_stage[1]=\"11-6,30-35\"", "first layer 11 > last layer 6"});
}

TEST(ConfigErrors, NonNumericRange) {
  expect_error(seed_text(R"(["0-5,24-29", "6-eleven,30-35", "12-17,36-41", "18-23,42-44"])"),
               {"pipeline_parallel_layers_per_stage[1]=\"6-eleven,30-35\"", "\"6-eleven\" is not a layer range"});
}

TEST(ConfigErrors, NumLayersDisagreesWithStrings) {
  expect_error(seed_text() + "num_layers: 44\n",
               {"t.yaml:5: ", "num_layers=44 disagrees with pipeline_parallel_layers_per_stage",
                "covers layers 0-44 (45 layers)"});
}

TEST(ConfigErrors, TooFewLayers) {
  expect_error("pipeline_parallel_size: 4\npipeline_parallel_interleave_num: 2\nnum_layers: 6\nmicro_batch_num: 8\n",
               {"t.yaml:3: ", "num_layers=6 is less than the 8 stages",
                "pipeline_parallel_size=4 x pipeline_parallel_interleave_num=2", "at least one layer"});
  expect_error("pipeline_parallel_size: 4\n", {"no layers given", "num_layers"});
  expect_error("pipeline_parallel_size: 4\nnum_layers: 2147483647\n",
               {"num_layers=2147483647: must be at most 16777216"});
  expect_error("pipeline_parallel_size: 4\nnum_layers: -4\n", {"t.yaml:2: num_layers=-4: must be at least 1"});
}

TEST(ConfigErrors, SizesAtLeastOne) {
  expect_error("pipeline_parallel_size: 0\nnum_layers: 4\n", {"pipeline_parallel_size=0: must be at least 1"});
  expect_error("pipeline_parallel_size: 2\npipeline_parallel_interleave_num: -1\nnum_layers: 4\n",
               {"pipeline_parallel_interleave_num=-1: must be at least 1"});
  expect_error(seed_with_micro("0"), {"t.yaml:4: micro_batch_num=0: must be at least 1"});
}

// PyTorch's flexible interleaving: rounds = max(1, m / pp) must divide m (3, 6, 10 with pp 4 run).
TEST(ConfigErrors, InterleavedNeedsMultipleOfRounds) {
  const std::string yaml = seed_with_micro("9");
  EXPECT_EQ(error_of([&] { load_config_text(yaml, "t.yaml"); }),
            "config: t.yaml:4: micro_batch_num=9 must be a multiple of its rounds max(1, micro_batch_num / "
            "pipeline_parallel_size=4) = 2 for interleaved_1f1b; use 8 or 10, or schedule 1f1b");
  expect_error(seed_with_micro("13"), {"micro_batch_num=13 must be a multiple of its rounds", ") = 3 ", "use 12 or 15"});
  for (const char* ok : {"3", "6", "10", "1"}) EXPECT_EQ(load_config_text(seed_with_micro(ok), "t.yaml").micro_batch_num, std::stoi(ok));
}

TEST(ConfigErrors, NonInterleavedScheduleWithVirtualStages) {
  expect_error(seed_text() + "schedule: 1f1b\n",
               {"t.yaml:5: ", "schedule=1f1b runs one stage per PP rank but pipeline_parallel_interleave_num=2",
                "use schedule interleaved_1f1b"});
  expect_error(seed_text() + "schedule: gpipe\n", {"schedule=gpipe runs one stage per PP rank"});
}

TEST(ConfigErrors, InterleavedWithoutVirtualStages) {
  expect_error("pipeline_parallel_size: 2\nnum_layers: 4\nmicro_batch_num: 4\nschedule: interleaved_1f1b\n",
               {"t.yaml:4: ", "schedule=interleaved_1f1b needs pipeline_parallel_interleave_num >= 2 (it is 1)",
                "use schedule 1f1b"});
}

TEST(ConfigErrors, UnknownKeyDidYouMean) {
  expect_error(seed_text() + "micro_batch_nums: 16\n", {"t.yaml:5: ", "unknown key micro_batch_nums",
                                                        "did you mean micro_batch_num?"});
  expect_error(seed_text() + "data_parallel: {mode: hsdp, shardsize: 2, replicate_size: 2}\n",
               {"unknown key data_parallel.shardsize; did you mean data_parallel.shard_size?"});
  expect_error(seed_text() + "shard_size: 8\n",
               {"unknown top-level key shard_size", "go under data_parallel: (data_parallel.shard_size)"});
  expect_error(seed_text() + "costs: {}\n", {"unknown key costs; did you mean cost?"});
  expect_error(seed_text() + "zzz: 1\n", {"unknown key zzz; known keys: pipeline_parallel_size"});
}

TEST(ConfigErrors, WrongTypes) {
  expect_error("pipeline_parallel_size: four\nnum_layers: 4\n",
               {"t.yaml:1: ", "pipeline_parallel_size=four: expected an integer"});
  expect_error("pipeline_parallel_size: 2.5\nnum_layers: 4\n", {"pipeline_parallel_size=2.5: expected an integer"});
  expect_error("pipeline_parallel_size: [4]\nnum_layers: 4\n",
               {"pipeline_parallel_size: expected an integer, got a sequence"});
  expect_error("pipeline_parallel_size: 99999999999\nnum_layers: 4\n",
               {"pipeline_parallel_size=99999999999: expected an integer that fits in 32 bits"});
  expect_error(seed_text() + "pipeline_parallel_overlap_p2p: maybe\n",
               {"pipeline_parallel_overlap_p2p=maybe: expected true or false"});
  expect_error(seed_text() + "pipeline_parallel_p2p_transport: multistream\n",
               {"pipeline_parallel_p2p_transport=multistream: expected one of plain, batch, multi_stream",
                "did you mean multi_stream?"});
  expect_error(seed_text("\"0-5,24-29\""), {"pipeline_parallel_layers_per_stage=0-5,24-29: expected a list of strings"});
  expect_error(seed_text("[[0, 5], \"6-11,30-35\"]"),
               {"pipeline_parallel_layers_per_stage[0]: expected a string of layer ranges", "got a sequence"});
  expect_error(seed_text() + "data_parallel: hsdp\n", {"data_parallel: expected a mapping", "got hsdp"});
  expect_error(seed_text() + "data_parallel: {mode: zero3}\n",
               {"data_parallel.mode=zero3: expected one of none, fsdp, hsdp"});
  expect_error(seed_text() + "data_parallel: {mode: hsdp, replicate_size: 2, reduce_grad: later}\n",
               {"data_parallel.reduce_grad=later: expected one of inline, async"});
}

TEST(ConfigErrors, DataParallelRules) {
  expect_error(seed_text() + "data_parallel:\n  reduce_grad: async\n",
               {"t.yaml:6: ", "data_parallel.reduce_grad=async needs data_parallel.mode fsdp or hsdp",
                "data_parallel.mode=none"});
  expect_error(seed_text() + "data_parallel: {mode: none, shard_size: 8}\n",
               {"data_parallel.shard_size=8 needs data_parallel.mode fsdp or hsdp"});
  expect_error(seed_text() + "data_parallel: {mode: fsdp, shard_size: 4, replicate_size: 2}\n",
               {"data_parallel.replicate_size=2 must be 1 for data_parallel.mode=fsdp", "use mode hsdp"});
  expect_error(seed_text() + "data_parallel: {mode: fsdp}\n",
               {"data_parallel.shard_size=1 (default) must be at least 2 for data_parallel.mode=fsdp"});
  expect_error(seed_text() + "data_parallel: {mode: hsdp}\n",
               {"data_parallel.shard_size=1 (default) and data_parallel.replicate_size=1 (default) leave "
                "data_parallel.mode=hsdp without data parallelism", "use mode none"});
  expect_error(seed_text() + "data_parallel: {mode: hsdp, shard_size: 2, replicate_size: 0}\n",
               {"data_parallel.replicate_size=0 must be at least 1 for data_parallel.mode=hsdp"});
  expect_error(seed_text() + "data_parallel: {mode: hsdp, shard_size: 0, replicate_size: 2}\n",
               {"data_parallel.shard_size=0 must be at least 1 for data_parallel.mode=hsdp"});
  expect_error(seed_text() + "data_parallel: {mode: hsdp, shard_size: 2, replicate_size: 2, max_active_stages: 3}\n",
               {"data_parallel.max_active_stages=3 must be between 1 and pipeline_parallel_interleave_num=2"});
  expect_error(seed_text() + "data_parallel: {mode: hsdp, shard_size: 2, replicate_size: 2, max_active_stages: 0}\n",
               {"data_parallel.max_active_stages=0 must be between 1 and"});
  expect_error(seed_text() + "data_parallel: {mode: hsdp, shard_size: 65536, replicate_size: 65536}\n",
               {"ranks: must be at most"});
}

TEST(ConfigErrors, YamlShape) {
  expect_error("", {"empty config"});
  expect_error("- 1\n- 2\n", {"expected a mapping of keys at the top level, got a sequence"});
  expect_error("pipeline_parallel_size: 4\nnum_layers: 8\npipeline_parallel_size: 2\n",
               {"t.yaml:3: duplicate key pipeline_parallel_size"});
  expect_error("pipeline_parallel_size: 4\nnum_layers: [8\n", {"t.yaml:", "invalid YAML"});
  expect_error("a: 1\n---\nb: 2\n", {"2 YAML documents"});
}

TEST(ConfigLines, FileErrorsNameFileAndLine) {
  const std::string path = testing::TempDir() + "config_lines_test.yaml";
  auto write_and_load = [&](const std::string& text) {
    std::ofstream(path) << text;
    return error_of([&] { load_config_file(path); });
  };
  EXPECT_EQ(write_and_load(seed_text() + "# comment\nmicro_batch_nums: 16\n"),
            "config: " + path + ":6: unknown key micro_batch_nums; did you mean micro_batch_num?");
  // A bad layer string is reported at its own line in a block list.
  const std::string block = "pipeline_parallel_size: 2\npipeline_parallel_interleave_num: 2\n"
                            "pipeline_parallel_layers_per_stage:\n  - \"0-1,4-5\"\n  - \"2-3,x\"\nmicro_batch_num: 4\n";
  EXPECT_EQ(write_and_load(block).rfind("config: " + path + ":5: pipeline_parallel_layers_per_stage[1]=\"2-3,x\"", 0),
            0u)
      << write_and_load(block);
  // A cross-key rule is reported at the line of the key it names.
  const std::string micro = seed_with_micro("9");
  EXPECT_NE(write_and_load(micro).find(path + ":4: micro_batch_num=9 must be a multiple"), std::string::npos);
  EXPECT_EQ(error_of([] { load_config_file("/nonexistent/x.yaml"); }),
            "config: cannot read /nonexistent/x.yaml: No such file or directory");
  std::remove(path.c_str());
}

TEST(ConfigOverride, ChangesAndRevalidates) {
  PipelineConfig c = load_config_file(kExamples + "seed-pp4-vpp2-hsdp.yaml");
  apply_override(c, "micro_batch_num", "8");
  EXPECT_EQ(c.micro_batch_num, 8);
  EXPECT_EQ(error_of([&] { apply_override(c, "micro_batch_num", "9"); }),
            "config: micro_batch_num=9 must be a multiple of its rounds max(1, micro_batch_num / "
            "pipeline_parallel_size=4) = 2 for interleaved_1f1b; use 8 or 10, or schedule 1f1b");
  EXPECT_EQ(c.micro_batch_num, 8);  // unchanged after a rejected override
  apply_override(c, "data_parallel.reduce_grad", "inline");
  EXPECT_EQ(c.reduce_grad, ReducePolicy::INLINE);
  apply_override(c, "pipeline_parallel_p2p_transport", "batch");
  EXPECT_EQ(c.pipeline_parallel_p2p_transport, P2PTransport::BATCH);
  apply_override(c, "pipeline_parallel_overlap_b_f", "false");
  EXPECT_FALSE(c.pipeline_parallel_overlap_b_f);
}

TEST(ConfigOverride, DataParallelModeChange) {
  PipelineConfig c = load_config_file(kExamples + "seed-pp4-vpp2-hsdp.yaml");
  EXPECT_NE(error_of([&] { apply_override(c, "data_parallel.mode", "fsdp"); })
                .find("data_parallel.replicate_size=128 must be 1 for data_parallel.mode=fsdp"),
            std::string::npos);
  apply_overrides(c, {{"data_parallel.mode", "fsdp"}, {"data_parallel.replicate_size", "1"}});
  EXPECT_EQ(c.mode, DPMode::FSDP);
  EXPECT_EQ(c.world(false), (World{4, 2, 32, 1, false}));
  apply_override(c, "data_parallel", "{mode: hsdp, shard_size: 2, replicate_size: 4}");
  EXPECT_EQ(c.world(false), (World{4, 2, 2, 4, false}));
  EXPECT_NE(error_of([&] { apply_override(c, "data_parallel.mode", "none"); })
                .find("data_parallel.shard_size=2 needs data_parallel.mode fsdp or hsdp"),
            std::string::npos);
}

TEST(ConfigOverride, ReducePolicyFollowsModeWhenNotGiven) {
  PipelineConfig c = load_config_text(seed_text());
  EXPECT_EQ(c.reduce_grad, ReducePolicy::NONE);
  apply_overrides(c, {{"data_parallel.mode", "hsdp"}, {"data_parallel.replicate_size", "2"}});
  EXPECT_EQ(c.reduce_grad, ReducePolicy::INLINE);
}

TEST(ConfigOverride, PipelineSizeWithLayerStrings) {
  PipelineConfig c = load_config_file(kExamples + "seed-pp4-vpp2-hsdp.yaml");
  EXPECT_NE(error_of([&] { apply_override(c, "pipeline_parallel_size", "2"); })
                .find("pipeline_parallel_layers_per_stage has 4 strings but pipeline_parallel_size=2"),
            std::string::npos);
  apply_overrides(c, {{"pipeline_parallel_size", "2"},
                      {"pipeline_parallel_layers_per_stage", "0-11,24-35;12-23,36-44"}});
  const std::vector<LayerRange> expected = {{0, 11}, {12, 23}, {24, 35}, {36, 44}};
  EXPECT_EQ(c.stage_layers, expected);
  EXPECT_EQ(c.num_layers, 45);
  // The YAML flow form works too.
  apply_override(c, "pipeline_parallel_layers_per_stage", R"(["0-9,20-29", "10-19,30-44"])");
  EXPECT_EQ(c.stage_layers[3], (LayerRange{30, 44}));
  // "" drops the strings: even split of the 45 layers over 4 stages (12, 11, 11, 11).
  apply_override(c, "pipeline_parallel_layers_per_stage", "");
  const std::vector<LayerRange> split = {{0, 11}, {12, 22}, {23, 33}, {34, 44}};
  EXPECT_EQ(c.stage_layers, split);
}

TEST(ConfigOverride, EvenSplitFollowsSizes) {
  PipelineConfig c = load_config_file(kExamples + "small-pp2-vpp2-fsdp.yaml");
  // schedule was given as interleaved_1f1b, so dropping virtual stages alone is rejected.
  EXPECT_NE(error_of([&] { apply_override(c, "pipeline_parallel_interleave_num", "1"); })
                .find("schedule=interleaved_1f1b needs pipeline_parallel_interleave_num >= 2"),
            std::string::npos);
  apply_overrides(c, {{"pipeline_parallel_interleave_num", "1"}, {"schedule", "1f1b"}});
  const std::vector<LayerRange> expected = {{0, 3}, {4, 7}};
  EXPECT_EQ(c.stage_layers, expected);
  EXPECT_NE(error_of([&] { apply_override(c, "num_layers", "1"); }).find("num_layers=1 is less than the 2 stages"),
            std::string::npos);
}

TEST(ConfigOverride, DefaultScheduleFollowsInterleave) {
  PipelineConfig c = load_config_text("pipeline_parallel_size: 2\nnum_layers: 8\nmicro_batch_num: 4\n");
  EXPECT_EQ(c.schedule, ScheduleKind::ONE_F_ONE_B);
  apply_override(c, "pipeline_parallel_interleave_num", "2");
  EXPECT_EQ(c.schedule, ScheduleKind::INTERLEAVED_1F1B);
  EXPECT_EQ(c.stage_layers.size(), 4u);
}

TEST(ConfigOverride, BadKeysAndValues) {
  PipelineConfig c = load_config_file(kExamples + "seed-pp4-vpp2-hsdp.yaml");
  EXPECT_EQ(error_of([&] { apply_override(c, "micro_batch_nums", "8"); }),
            "config: unknown key micro_batch_nums; did you mean micro_batch_num?");
  EXPECT_EQ(error_of([&] { apply_override(c, "micro_batch_num", "eight"); }),
            "config: micro_batch_num=eight: expected an integer");
  EXPECT_EQ(error_of([&] { apply_override(c, "micro_batch_num", ""); }),
            "config: micro_batch_num: expected an integer, got nothing (empty value)");
  EXPECT_NE(error_of([&] { apply_override(c, "data_parallel.shrad_size", "2"); })
                .find("did you mean data_parallel.shard_size?"),
            std::string::npos);
}

TEST(ConfigSections, KeptVerbatimAndOverridable) {
  PipelineConfig c = load_config_text(seed_text() + "cost:\n  p2p_gbps: 10\n  links: [a, b]\nmodel: {hidden: 1024}\n");
  ASSERT_EQ(c.extra_sections.size(), 2u);
  EXPECT_EQ(c.extra_sections.at("cost"), "p2p_gbps: 10\nlinks: [a, b]");
  EXPECT_EQ(c.extra_sections.at("model"), "{hidden: 1024}");
  apply_override(c, "cost.p2p_gbps", "20");
  apply_override(c, "straggler.tail.ms", "474");
  EXPECT_EQ(c.extra_sections.at("cost"), "p2p_gbps: 20\nlinks: [a, b]");
  EXPECT_EQ(c.extra_sections.at("straggler"), "tail:\n  ms: 474");
  EXPECT_NE(error_of([&] { apply_override(c, "cost.links.x", "1"); }).find("non-mapping"), std::string::npos);
}

TEST(ConfigRoundTrip, ToYamlLoadsBack) {
  for (const char* name : {"seed-pp4-vpp2-hsdp.yaml", "small-pp2-vpp2-fsdp.yaml", "small-pp2-vpp2-hsdp.yaml"}) {
    const PipelineConfig a = load_config_file(kExamples + name);
    const PipelineConfig b = load_config_text(to_yaml(a));
    EXPECT_EQ(b.stage_layers, a.stage_layers) << name;
    EXPECT_EQ(b.num_layers, a.num_layers) << name;
    EXPECT_EQ(b.micro_batch_num, a.micro_batch_num) << name;
    EXPECT_EQ(b.schedule, a.schedule) << name;
    EXPECT_EQ(b.pipeline_parallel_p2p_transport, a.pipeline_parallel_p2p_transport) << name;
    EXPECT_EQ(b.pipeline_parallel_overlap_b_f, a.pipeline_parallel_overlap_b_f) << name;
    EXPECT_EQ(b.world(true), a.world(true)) << name;
    EXPECT_EQ(b.reduce_grad, a.reduce_grad) << name;
    EXPECT_EQ(b.sync_last_reduce, a.sync_last_reduce) << name;
    EXPECT_EQ(b.extra_sections, a.extra_sections) << name;
  }
}

TEST(ConfigValidate, CodeBuiltConfig) {
  PipelineConfig c;
  c.pipeline_parallel_size = 2;
  c.num_layers = 4;
  c.stage_layers = {{0, 1}, {2, 3}};
  c.reduce_grad = ReducePolicy::NONE;
  EXPECT_NO_THROW(validate(c));
  c.reduce_grad = ReducePolicy::INLINE;  // the member default, wrong for mode none
  EXPECT_NE(error_of([&] { validate(c); }).find("reduce_grad=inline needs data_parallel.mode fsdp or hsdp"),
            std::string::npos);
  c.reduce_grad = ReducePolicy::NONE;
  c.stage_layers = {{0, 2}, {2, 3}};
  EXPECT_NE(error_of([&] { validate(c); }).find("stage_layers: layer 2 is in both stage 0"), std::string::npos);
}

TEST(ConfigNames, RoundTrip) {
  for (auto k : {ScheduleKind::GPIPE, ScheduleKind::ONE_F_ONE_B, ScheduleKind::INTERLEAVED_1F1B})
    EXPECT_EQ(parse_schedule_kind(to_string(k)), k);
  for (auto t : {P2PTransport::PLAIN, P2PTransport::BATCH, P2PTransport::MULTI_STREAM})
    EXPECT_EQ(parse_p2p_transport(to_string(t)), t);
  EXPECT_STREQ(to_string(ScheduleKind::INTERLEAVED_1F1B), "interleaved_1f1b");
  EXPECT_STREQ(to_string(P2PTransport::MULTI_STREAM), "multi_stream");
  EXPECT_FALSE(parse_schedule_kind("1F1B").has_value());
  EXPECT_EQ(extra_section_names().front(), "cost");
}

}  // namespace
}  // namespace ppstream
