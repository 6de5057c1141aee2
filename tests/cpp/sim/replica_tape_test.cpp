// The replica-vector evaluation (ppstream/engine/replica_tape.h): the template tape of replica 0,
// evaluated over every replica, gives every timing of every rank of the expanded world's engine
// run bit-equal (hence its step time per replica and every per-rank figure), over HSDP with
// shard and replicate > 1, shard = 1, replicate = 1, 1F1B and interleaved schedules, inline and
// async reductions, a lognormal draw and fixed tails on single members, and the platforms with
// and without one communication queue per rank.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <sstream>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/topology.h"
#include "ppstream/config/config.h"
#include "ppstream/engine/replica_tape.h"
#include "ppstream/lower/lower.h"
#include "ppstream/sim/cost_model.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/sim/trials.h"
#include "../cli_run.h"
#include "small_configs.h"

namespace ppstream::sim {
namespace {

const char* const kCost =
    "cost: {forward_ms_per_layer: 1.1, backward_ms_per_layer: 2.3, grad_bytes_per_layer: 1.0e8, param_bytes_per_layer: "
    "3.0e7, collective_alpha_ms: 0.013, shard_bandwidth_gb_per_s: 37, replicate_bandwidth_gb_per_s: 10, p2p_latency_ms: "
    "0.1, activation_bytes: 1.0e8, p2p_bandwidth_gb_per_s: 10, host_issue_ms: 0.003}\n";

// Two tails on single members (one on an UNSHARD, one on a reduction) and, when `drawn`, a
// lognormal draw on every member of every collective.
std::string straggler(bool drawn) {
  return std::string("straggler: {seed: 5, tails: [{pp_rank: 1, dp_index: 1, delay_ms: 7.7, collectives: [reduce_grad]},"
                     " {pp_rank: 2, dp_index: 0, delay_ms: 3.1, collectives: [unshard], stages: [2]}]") +
         (drawn ? ", distribution: {kind: lognormal, median_ms: 0.9, sigma: 1.0}}\n" : "}\n");
}

std::string one_f_one_b(int shard, int replicate, const std::string& policy) {
  return fmt::format(
      "pipeline_parallel_size: 4\nmicro_batch_num: 6\nnum_layers: 8\n"
      "data_parallel: {{mode: {}, shard_size: {}, replicate_size: {}, reduce_grad: {}}}\n",
      replicate == 1 ? "fsdp" : "hsdp", shard, replicate, policy);
}

void expect_replicas_equal_expanded(const std::string& yaml, PlatformKind platform, const std::string& what) {
  const PipelineConfig cfg = load_config_text(yaml, "test");
  LowerOptions lo;
  lo.expanded = true;
  const ProgramSet expanded = compile(cfg, lo);
  const ProgramSet tmpl = replica_template(compile(cfg), cfg.world(true));
  const World& w = expanded.world;
  const TrialSetup setup = trial_setup(cfg, w);
  for (uint64_t trial : {0u, 3u}) {
    const SimCostModel full(expanded, cfg, setup.cost, StragglerModel(setup.straggler, w, trial));
    const SimCostModel part(tmpl, cfg, setup.cost, StragglerModel(setup.straggler, w, trial));
    const EngineResult want = run_engine(expanded, {platform, &full});
    ASSERT_TRUE(want.completed) << what;
    const ReplicaTape tape = record_replica_tape(tmpl, {platform, &part});
    ASSERT_TRUE(tape.tape) << what;
    const ReplicaRun got = replay_replicas(tape, &part);
    ASSERT_EQ(got.replicas(), w.dp()) << what;
    const std::string at = fmt::format("{} trial {}", what, trial);
    EXPECT_EQ(std::bit_cast<uint64_t>(got.makespan_ms()), std::bit_cast<uint64_t>(want.makespan_ms)) << at;
    for (size_t pp = 0; pp < tmpl.programs.size(); ++pp)
      for (int32_t d = 0; d < w.dp(); ++d) {
        const size_t p = pp * static_cast<size_t>(w.dp()) + static_cast<size_t>(d);
        ASSERT_EQ(expanded.programs[p].rank.v, tmpl.programs[pp].rank.v + d) << at;
        const auto& row = want.timing[p];
        ASSERT_EQ(row.size(), tmpl.programs[pp].instrs.size()) << at;
        for (size_t i = 0; i < row.size(); ++i) {
          const InstrTiming a = row[i], b = got.timing(static_cast<int32_t>(pp), static_cast<int32_t>(i), d);
          ASSERT_TRUE(std::bit_cast<uint64_t>(a.issue_ms) == std::bit_cast<uint64_t>(b.issue_ms) &&
                      std::bit_cast<uint64_t>(a.ready_ms) == std::bit_cast<uint64_t>(b.ready_ms) &&
                      std::bit_cast<uint64_t>(a.start_ms) == std::bit_cast<uint64_t>(b.start_ms) &&
                      std::bit_cast<uint64_t>(a.end_ms) == std::bit_cast<uint64_t>(b.end_ms))
              << at << ": r" << expanded.programs[p].rank.v << " #" << i << ": expanded {" << a.issue_ms << ", "
              << a.ready_ms << ", " << a.start_ms << ", " << a.end_ms << "} vector {" << b.issue_ms << ", " << b.ready_ms
              << ", " << b.start_ms << ", " << b.end_ms << "}";
        }
      }
    // Per replica: the step end of its ranks, and replica() is the same view.
    for (int32_t d = 0; d < w.dp(); ++d) {
      double end = 0;
      for (size_t pp = 0; pp < tmpl.programs.size(); ++pp)
        for (const InstrTiming& t : want.timing[pp * static_cast<size_t>(w.dp()) + static_cast<size_t>(d)])
          end = std::max(end, t.end_ms);
      EXPECT_EQ(got.makespan_ms(d), end) << at << " replica " << d;
      EXPECT_EQ(got.replica(d).timing.back().back().end_ms,
                got.timing(static_cast<int32_t>(tmpl.programs.size()) - 1,
                           static_cast<int32_t>(tmpl.programs.back().instrs.size()) - 1, d).end_ms);
    }
    // With shard and replicate > 1 the draws must make replicas' timings differ for the test to
    // mean anything (their step ends may agree: the last reductions synchronize the groups).
    // With one group spanning the DP ranks every member ends each collective at its max: the
    // replicas agree, and a reduction over the wrong members shows as a difference.
    bool differ = false;
    for (int32_t d = 1; d < w.dp() && !differ; ++d)
      for (size_t pp = 0; pp < tmpl.programs.size() && !differ; ++pp)
        for (size_t i = 0; i < tmpl.programs[pp].instrs.size() && !differ; ++i)
          differ = got.timing(static_cast<int32_t>(pp), static_cast<int32_t>(i), d).end_ms !=
                   got.timing(static_cast<int32_t>(pp), static_cast<int32_t>(i), 0).end_ms;
    EXPECT_EQ(differ, w.shard > 1 && w.replicate > 1) << at << ": whether a replica's timings differ from replica 0's";
  }
}

const PlatformKind kTimed[] = {PlatformKind::ASCEND_MINDSPORE, PlatformKind::ASCEND_ONE_COMM_STREAM,
                               PlatformKind::CPU_SERIAL};

TEST(ReplicaTape, HsdpInterleavedEveryReplicaBitEqualToTheExpandedRun) {
  for (const char* policy : {"async", "inline"})
    for (PlatformKind pk : kTimed)
      for (bool drawn : {true, false})
        expect_replicas_equal_expanded(fixtures::interleaved_hsdp(2, 3, policy) + kCost + straggler(drawn), pk,
                                       fmt::format("hsdp 2x3 interleaved {} {} drawn {}", policy, to_string(pk), drawn));
}

TEST(ReplicaTape, ShardOneReplicateOneAndOneFOneB) {
  for (PlatformKind pk : kTimed) {
    expect_replicas_equal_expanded(one_f_one_b(1, 4, "async") + kCost + straggler(true), pk,
                                   fmt::format("shard 1 x replicate 4 1f1b {}", to_string(pk)));
    expect_replicas_equal_expanded(one_f_one_b(4, 1, "inline") + kCost + straggler(true), pk,
                                   fmt::format("fsdp 4 1f1b {}", to_string(pk)));
    expect_replicas_equal_expanded(one_f_one_b(3, 2, "async") + kCost + straggler(false), pk,
                                   fmt::format("hsdp 3x2 1f1b fixed tails {}", to_string(pk)));
  }
}

TEST(ReplicaTape, TemplateTopologyFormsOneMemberInstancesAndRefusesOtherReplicas) {
  const PipelineConfig cfg = load_config_text(fixtures::interleaved_hsdp(2, 3, "async"), "test");
  ProgramSet tmpl = replica_template(compile(cfg), cfg.world(true));
  const engine::Topology plain = engine::build_topology(tmpl);
  ASSERT_FALSE(plain.errors.empty());
  EXPECT_NE(plain.errors.front().message.find("expanded set lacks"), std::string::npos) << plain.errors.front().message;
  const engine::Topology t = engine::build_topology(tmpl, true);
  ASSERT_TRUE(t.errors.empty()) << t.errors.front().message;
  ASSERT_FALSE(t.instances.empty());
  for (const engine::CollectiveInstance& ci : t.instances) EXPECT_EQ(ci.size, 1);
  tmpl.programs[1].rank = Rank{tmpl.programs[1].rank.v + 1};
  const engine::Topology bad = engine::build_topology(tmpl, true);
  ASSERT_FALSE(bad.errors.empty());
  EXPECT_THROW(record_replica_tape(tmpl, {PlatformKind::ASCEND_MINDSPORE, nullptr}), std::invalid_argument);
}

// simulate --cluster from the replica vector (SimOptions::replica_vector, the default) reports
// what the expanded world's engine runs report: the whole JSON (every rank's figures, replica
// 0's waits and P2P timings, the critical path with its ranks and texts, memory, every trial's
// step time), the engine's wall time aside.
std::string cluster_json(const std::string& yaml, bool vector, int32_t trials, PlatformKind platform) {
  SimOptions o;
  o.cluster = true;
  o.trials = trials;
  o.threads = 2;
  o.platform = platform;
  o.replica_vector = vector;
  o.policies = {ReducePolicy::INLINE, ReducePolicy::ASYNC};
  SimReport rep = simulate(load_config_text(yaml, "test"), o);
  std::string listed;  // what the JSON leaves out: every rank's figures and memory entry
  for (PolicyRun& pr : rep.runs) {
    pr.engine_wall_ms = 0;
    for (const RankMetrics& r : pr.metrics.ranks)
      listed += fmt::format("r{} p{} {} {} {} {} {};", r.rank.v, r.pp_rank, r.compute_ms, r.compute_wait_ms,
                            r.reduce_exposed_ms, r.step_end_ms, r.longest_compute_wait ? r.longest_compute_wait->cause : "");
    for (const RankMemory& r : pr.memory.ranks) listed += fmt::format("m{} {} {};", r.rank.v, r.computed, r.peak_bytes);
  }
  return report_json(rep) + listed;
}

TEST(ReplicaTape, SimulateClusterReportsWhatTheExpandedRunsReport) {
  const std::string configs[] = {fixtures::interleaved_hsdp(2, 3, "async") + kCost + straggler(true),
                                 fixtures::interleaved_hsdp(3, 2, "inline") + kCost + straggler(false),
                                 one_f_one_b(1, 4, "async") + kCost + straggler(true),
                                 one_f_one_b(4, 1, "async") + kCost + straggler(true)};
  for (const std::string& yaml : configs)
    for (PlatformKind pk : {PlatformKind::ASCEND_MINDSPORE, PlatformKind::ASCEND_ONE_COMM_STREAM}) {
      const std::string want = cluster_json(yaml, false, 4, pk);
      EXPECT_EQ(cluster_json(yaml, true, 4, pk), want) << to_string(pk) << "\n" << yaml;
    }
}

// The CLI's check: --cluster-engine expanded prints what the default (replica) prints, the
// engine's wall time aside; another value is refused (exit 2) naming the option.
TEST(ReplicaTape, ClusterEngineFlagSelectsTheEngineNotTheOutput) {
  const std::string cfg = std::string(PPSTREAM_SOURCE_DIR) + "/examples/small-pp2-vpp2-hsdp.yaml";
  const auto wall = [](const std::string& s) {  // every line but the "engine_wall_ms" ones
    std::istringstream in(s);
    std::string out;
    for (std::string line; std::getline(in, line);)
      if (line.find("engine_wall_ms") == std::string::npos) out += line + "\n";
    return out;
  };
  const auto a = testing_cli::run_ppstream("simulate " + cfg + " --cluster --trials 3 --quiet --json --reduce-grad both");
  const auto b = testing_cli::run_ppstream("simulate " + cfg +
                                           " --cluster --cluster-engine expanded --trials 3 --quiet --json --reduce-grad both");
  ASSERT_EQ(a.rc, 0) << a.out;
  ASSERT_EQ(b.rc, 0) << b.out;
  EXPECT_NE(a.out.find("engine_wall_ms"), std::string::npos);
  EXPECT_EQ(wall(a.out), wall(b.out));
  const auto bad = testing_cli::run_ppstream("simulate " + cfg + " --cluster --cluster-engine vector 2>&1");
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_NE(bad.out.find("--cluster-engine"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace ppstream::sim
