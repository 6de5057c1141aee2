// The tape (ppstream/engine/tape.h): recording does not change a run, and a replay under
// another cost model is bit-equal to a fresh engine run under it — every InstrTiming field, the
// makespan and the event count — over the example configs, a sample of the verify --grid space,
// every platform profile, host issue and launch delays, drawn arrivals and outside members.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "engine/topology.h"
#include "ppstream/config/config.h"
#include "ppstream/engine/tape.h"
#include "ppstream/grid/grid.h"
#include "ppstream/lower/lower.h"
#include "ppstream/program/format.h"
#include "program_builder.h"
#include "racing_reductions.h"
#include "random_cost.h"

namespace ppstream {
namespace {

using testing::RandomCost;

// RandomCost(seed)'s durations with another draw of arrivals (as SimCostModel::with_straggler).
class Redrawn : public RandomCost {
 public:
  Redrawn(uint64_t seed, uint64_t draw) : RandomCost(seed), draw_(draw) {}
  double arrival_delay_ms(const Program& p, const Instr& i) const override { return RandomCost(draw_).arrival_delay_ms(p, i); }
  double external_arrival_ms(const Program& p, const Instr& i) const override {
    return RandomCost(draw_).external_arrival_ms(p, i);
  }

 private:
  uint64_t draw_;
};

const PlatformKind kPlatforms[] = {PlatformKind::STRICT,      PlatformKind::ASCEND_MINDSPORE,
                                   PlatformKind::CPU_SERIAL,  PlatformKind::ASCEND_ONE_COMM_STREAM,
                                   PlatformKind::STRICT_TIMED, PlatformKind::CPU_MCCL};

// Bit-equal results, every field (a replay that is only close fails).
void expect_same(const EngineResult& want, const EngineResult& got, const std::string& what) {
  ASSERT_EQ(want.completed, got.completed) << what;
  ASSERT_EQ(want.timing.size(), got.timing.size()) << what;
  EXPECT_EQ(std::bit_cast<uint64_t>(want.makespan_ms), std::bit_cast<uint64_t>(got.makespan_ms))
      << what << ": " << want.makespan_ms << " vs " << got.makespan_ms;
  EXPECT_EQ(want.events_processed, got.events_processed) << what;
  for (size_t p = 0; p < want.timing.size(); ++p) {
    ASSERT_EQ(want.timing[p].size(), got.timing[p].size()) << what;
    for (size_t i = 0; i < want.timing[p].size(); ++i) {
      const InstrTiming& a = want.timing[p][i];
      const InstrTiming& b = got.timing[p][i];
      const bool same = std::bit_cast<uint64_t>(a.issue_ms) == std::bit_cast<uint64_t>(b.issue_ms) &&
                        std::bit_cast<uint64_t>(a.ready_ms) == std::bit_cast<uint64_t>(b.ready_ms) &&
                        std::bit_cast<uint64_t>(a.start_ms) == std::bit_cast<uint64_t>(b.start_ms) &&
                        std::bit_cast<uint64_t>(a.end_ms) == std::bit_cast<uint64_t>(b.end_ms);
      ASSERT_TRUE(same) << what << ": program " << p << " #" << i << ": engine " << a.issue_ms << "/" << a.ready_ms
                        << "/" << a.start_ms << "/" << a.end_ms << ", replay " << b.issue_ms << "/" << b.ready_ms << "/"
                        << b.start_ms << "/" << b.end_ms;
    }
  }
}

// Records under seed 1 (the recording run must equal a plain run) and replays seeds 2..1+draws
// against fresh engine runs. Returns false when the set deadlocks on `platform` (no tape).
bool check_set(const ProgramSet& set, PlatformKind platform, const std::string& what, int draws = 2) {
  const engine::Topology topo = engine::build_topology(set);
  const RandomCost first(1);
  EngineResult recorded;
  const std::shared_ptr<const Tape> tape = record_tape(topo, {platform, &first}, recorded);
  const EngineResult plain = engine::run_checked(topo, {platform, &first});
  expect_same(plain, recorded, what + " (recording run)");
  if (!plain.completed) {
    EXPECT_EQ(tape, nullptr) << what << ": a deadlocked run has no tape";
    return false;
  }
  if (tape == nullptr) {
    ADD_FAILURE() << what << ": a completed run has a tape";
    return false;
  }
  EXPECT_EQ(tape->platform(), platform);
  expect_same(plain, replay_tape(*tape, &first), what + " (replay, same model)");
  for (uint64_t seed = 2; seed < 2 + static_cast<uint64_t>(draws); ++seed) {
    const RandomCost other(seed);
    expect_same(engine::run_checked(topo, {platform, &other}), replay_tape(*tape, &other),
                what + " seed " + std::to_string(seed));
  }
  expect_same(engine::run_checked(topo, {platform, nullptr}), replay_tape(*tape, nullptr), what + " (zero cost)");
  // The trial runner's path: model 1's fixed terms, another draw's arrivals, step time only.
  const TapeCosts costs = tape_costs(*tape, &first);
  std::vector<double> arrival, slots;
  for (uint64_t draw = 7; draw < 9; ++draw) {
    const Redrawn redrawn(1, draw);
    arrival_costs(*tape, &redrawn, arrival);
    const EngineResult r = replay_tape(*tape, costs.fixed, arrival, slots, false);
    const EngineResult want = engine::run_checked(topo, {platform, &redrawn});
    EXPECT_TRUE(r.timing.empty());
    EXPECT_EQ(std::bit_cast<uint64_t>(want.makespan_ms), std::bit_cast<uint64_t>(r.makespan_ms)) << what << " draw " << draw;
    EXPECT_EQ(want.events_processed, r.events_processed) << what;
  }
  return true;
}

std::string example(const std::string& name) { return std::string(PPSTREAM_SOURCE_DIR) + "/examples/" + name; }

TEST(Tape, ExampleConfigsReplayBitEqualOnEveryPlatform) {
  struct Case {
    std::string file;
    bool expanded;
  };
  const Case cases[] = {{"small-pp2-vpp2-hsdp.yaml", false},    {"small-pp2-vpp2-hsdp.yaml", true},
                        {"small-pp2-vpp2-fsdp.yaml", true},     {"small-pp2-vpp2-fsdp4-train.yaml", true},
                        {"seed-pp4-vpp2-hsdp.yaml", false},     {"seed-300b-moe.yaml", false},
                        {"seed-300b-moe-zb-h1.yaml", false},    {"seed-300b-moe-v.yaml", false},
                        {"seed-300b-moe-tail.yaml", false}};
  int completed = 0;
  for (const Case& c : cases) {
    LowerOptions lo;
    lo.expanded = c.expanded;
    lo.verify_each_pass = false;
    const ProgramSet set = compile(load_config_file(example(c.file)), lo);
    for (PlatformKind k : kPlatforms)
      completed += check_set(set, k, c.file + (c.expanded ? " expanded " : " ") + to_string(k)) ? 1 : 0;
  }
  EXPECT_GE(completed, 40) << "most cases must complete for the comparison to mean anything";
}

// HSDP 2×2 and 4×2, FSDP, buckets, reduction order, inline and async, expanded: every
// collective phase chain, communicator order and queue the engine has.
TEST(Tape, HsdpFsdpBucketsExpandedReplayBitEqual) {
  const std::string base =
      "pipeline_parallel_size: 2\npipeline_parallel_interleave_num: 2\nmicro_batch_num: 4\nnum_layers: 8\n"
      "pipeline_parallel_overlap_p2p: true\npipeline_parallel_overlap_b_f: true\n"
      "pipeline_parallel_p2p_transport: multi_stream\n";
  const std::string dps[] = {
      "data_parallel: {mode: hsdp, shard_size: 2, replicate_size: 2, reduce_grad: async}\n",
      "data_parallel: {mode: hsdp, shard_size: 4, replicate_size: 2, reduce_grad: inline}\n",
      "data_parallel: {mode: hsdp, shard_size: 2, replicate_size: 2, reduce_grad: async, reduce_buckets: 2}\n",
      "data_parallel: {mode: fsdp, shard_size: 4, reduce_grad: async}\n",
  };
  for (const std::string& dp : dps) {
    LowerOptions lo;
    lo.expanded = true;
    lo.verify_each_pass = false;
    const ProgramSet set = compile(load_config_text(base + dp, "test"), lo);
    for (PlatformKind k : kPlatforms) check_set(set, k, dp + to_string(k));
  }
}

// A sample of `verify --grid` (every 18th config; expanded shard 2 × replicate 2) on the timed
// profiles.
TEST(Tape, GridSampleReplaysBitEqual) {
  GridOptions go;
  go.max_pp = 4;
  go.max_vpp = 2;
  go.max_microbatches = 8;
  go.expanded = true;
  const std::vector<PipelineConfig> configs = grid_configs(go);
  ASSERT_GT(configs.size(), 50u);
  int checked = 0;
  for (size_t c = 0; c < configs.size(); c += 18) {
    LowerOptions lo;
    lo.expanded = true;
    lo.verify_each_pass = false;
    const ProgramSet set = compile(configs[c], lo);
    for (PlatformKind k : {PlatformKind::ASCEND_MINDSPORE, PlatformKind::CPU_SERIAL, PlatformKind::CPU_MCCL,
                           PlatformKind::ASCEND_ONE_COMM_STREAM, PlatformKind::STRICT_TIMED})
      checked += check_set(set, k, summarize(configs[c]) + " " + to_string(k), 1) ? 1 : 0;
  }
  EXPECT_GT(checked, 10);
}

// Reductions on one communicator from two streams with no event between them
// (racing_reductions.h; no compiled set has it): only the communicator chain orders them, the
// term a replay must keep.
TEST(Tape, CommunicatorChainsReplayBitEqual) {
  for (const auto& [shard, replicate, expanded] :
       {std::tuple{1, 2, false}, std::tuple{1, 2, true}, std::tuple{2, 2, true}, std::tuple{2, 1, true}}) {
    const ProgramSet set = parse_program_set(testing::racing_reductions(shard, replicate, expanded));
    for (PlatformKind k : kPlatforms)
      EXPECT_TRUE(check_set(set, k, fmt::format("racing {}x{} expanded={} {}", shard, replicate, expanded, to_string(k)), 4));
  }
}

TEST(Tape, DeadlockHasNoTape) {
  // Each rank receives before it sends, in separate BATCHes on one stream: a cycle everywhere.
  World w;
  w.pp = 2;
  const ProgramSet set = testing::SetBuilder(w)
                             .r(0)
                             .batch({testing::recv_b(0, 0, 1)})
                             .batch({testing::send_f(0, 0, 1)})
                             .r(1)
                             .batch({testing::recv_f(0, 1, 0)})
                             .batch({testing::send_b(0, 1, 0)})
                             .build();
  EngineResult r;
  EXPECT_EQ(record_tape(engine::build_topology(set), {PlatformKind::ASCEND_MINDSPORE, nullptr}, r), nullptr);
  EXPECT_FALSE(r.completed);
  EXPECT_FALSE(r.blocked.empty()) << "the recording run diagnoses the deadlock as run_engine does";
}

TEST(Tape, ReplayRefusesABadCostAsTheEngineDoes) {
  class Negative : public RandomCost {
   public:
    Negative() : RandomCost(3) {}
    double compute_ms(const Program&, const Instr& i) const override { return i.op == OpKind::B ? -1.0 : 1.0; }
  };
  LowerOptions lo;
  lo.verify_each_pass = false;
  const ProgramSet set = compile(load_config_file(example("small-pp2-vpp2-hsdp.yaml")), lo);
  const engine::Topology topo = engine::build_topology(set);
  const RandomCost good(1);
  EngineResult r;
  const auto tape = record_tape(topo, {PlatformKind::ASCEND_MINDSPORE, &good}, r);
  ASSERT_NE(tape, nullptr);
  const Negative bad;
  try {
    replay_tape(*tape, &bad);
    FAIL() << "a negative compute_ms must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cost model: compute_ms of r"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is -1 ms; expected a finite value >= 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ppstream
