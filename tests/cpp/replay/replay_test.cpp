// replay without MPI processes: buffer contents and their exact checks, the per-rank plan (P2P
// tags pair as the engine pairs ops, collective order agrees across each group), and the
// measurement path (simulated timings fed through MeasuredCost give the simulator's metrics),
// and the GEMM compute mode's sizing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <algorithm>

#include "ppstream/config/config.h"
#include "ppstream/program/streams.h"
#include "ppstream/lower/lower.h"
#include "ppstream/replay/replay.h"
#include "ppstream/verify/verify.h"
#include "ppstream/sim/simulate.h"
#include "replay/contents.h"
#include "replay/gemm.h"
#include "replay/measure.h"
#include "replay/overhead.h"
#include "replay/plan.h"

namespace ppstream::replay {
namespace {

PipelineConfig small_hsdp(const std::string& policy = "async", const std::string& extra = "") {
  return load_config_text(R"(pipeline_parallel_size: 2
pipeline_parallel_interleave_num: 2
num_layers: 8
micro_batch_num: 4
pipeline_parallel_overlap_p2p: true
pipeline_parallel_overlap_b_f: true
pipeline_parallel_p2p_transport: multi_stream
schedule: interleaved_1f1b
data_parallel: {mode: hsdp, shard_size: 2, replicate_size: 2, reduce_grad: )" + policy + R"(}
cost: {forward_ms_per_layer: 1.0, backward_ms_per_layer: 2.0, p2p_latency_ms: 0.1, activation_bytes: 4096,
       grad_bytes_per_layer: 1.0e6, param_bytes_per_layer: 1.0e6, collective_alpha_ms: 0.1,
       shard_bandwidth_gb_per_s: 10, replicate_bandwidth_gb_per_s: 5}
)" + extra);
}

TEST(ReplayContents, ReducedSumIsCheckedExactly) {
  const std::vector<int32_t> members = {4, 5, 6, 7};
  const Stage s{3};
  std::vector<double> sum(8, 0.0), mine(8);
  for (int32_t m : members) {
    fill_grad(mine, m, s, 1);
    for (size_t j = 0; j < 8; ++j) sum[j] += mine[j];
  }
  EXPECT_EQ(check_reduced(sum, 0, members, s, 1), std::nullopt);
  std::vector<double> chunk(sum.begin() + 4, sum.end());
  EXPECT_EQ(check_reduced(chunk, 1, members, s, 1), std::nullopt);
  EXPECT_NE(check_reduced(chunk, 0, members, s, 1), std::nullopt);  // wrong chunk
  sum[5] += 1;
  const auto bad = check_reduced(sum, 0, members, s, 1);
  ASSERT_TRUE(bad.has_value());
  EXPECT_NE(bad->find("element 5"), std::string::npos) << *bad;
  EXPECT_NE(check_reduced(sum, 0, {4, 5, 6}, s, 1), std::nullopt);  // a missing member
}

TEST(ReplayContents, ReceiveChecksTheMirrorOfItsSend) {
  const P2POp send{P2PKind::SEND_F, Microbatch{3}, Stage{0}, Rank{1}};
  std::vector<double> buf(16);
  fill_p2p(buf, 0, send, 0);
  const P2POp recv = mirror_of(send, Rank{0});  // RECV_F mb3 s1 <-r0, as r1 writes it
  EXPECT_EQ(check_p2p(buf, Rank{1}, recv, 0), std::nullopt);
  EXPECT_NE(check_p2p(buf, Rank{1}, recv, 1), std::nullopt);  // another step's data
  P2POp other = recv;
  other.mb = Microbatch{2};
  EXPECT_NE(check_p2p(buf, Rank{1}, other, 0), std::nullopt);  // another microbatch's data
}

TEST(ReplayContents, GatherIsCheckedPerMember) {
  const std::vector<int32_t> members = {2, 3};
  std::vector<double> out(8), part(4);
  for (size_t i = 0; i < 2; ++i) {
    fill_param(part, members[i], Stage{1}, 0);
    std::copy(part.begin(), part.end(), out.begin() + static_cast<long>(4 * i));
  }
  EXPECT_EQ(check_gathered(out, members, Stage{1}, 0), std::nullopt);
  EXPECT_NE(check_gathered(out, {3, 2}, Stage{1}, 0), std::nullopt);
}

TEST(ReplayPlan, WaitFollowsTheMostRecentRecordLikeTheEngine) {
  // An event recorded on two streams, then waited for: the replay's WAIT waits for the second
  // RECORD (the engine's Topology::synced_record), not the first.
  const PipelineConfig cfg = small_hsdp();
  ProgramSet set = verified_world(cfg, ReducePolicy::ASYNC);
  Program& p = set.programs[0];
  const auto n = static_cast<int32_t>(p.instrs.size());
  Instr rec;
  rec.op = OpKind::RECORD;
  rec.event = p.intern_event("re_recorded");
  rec.stream = streams::kCompute;
  p.instrs.push_back(rec);  // #n
  rec.stream = p.intern_stream("side");
  p.instrs.push_back(rec);  // #n+1
  Instr wait = rec;
  wait.op = OpKind::WAIT;
  wait.stream = p.intern_stream("other");
  p.instrs.push_back(wait);  // #n+2
  const sim::CostSpec cost = sim::parse_cost_spec(cfg.extra_sections.at("cost"), cfg.num_stages());
  const RankPlan plan = make_plan(set, 0, cfg, cost, 1 << 20);
  EXPECT_EQ(plan.instrs.at(static_cast<size_t>(n + 2)).record, n + 1);
}

TEST(ReplayTraceDir, CreatedAndOneSubdirectoryPerPolicyWhenSeveralRun) {
  const std::filesystem::path root = std::filesystem::path(::testing::TempDir()) / "ppstream_trace_dir_test";
  std::filesystem::remove_all(root);
  const std::string dir = (root / "new" / "traces").string();  // missing, parents too
  EXPECT_EQ(policy_trace_dir(dir, ReducePolicy::ASYNC, 1), dir);
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_EQ(policy_trace_dir(dir, ReducePolicy::INLINE, 2), dir + "/inline");
  EXPECT_EQ(policy_trace_dir(dir, ReducePolicy::ASYNC, 2), dir + "/async");
  EXPECT_TRUE(std::filesystem::is_directory(dir + "/async"));
  std::ofstream(root / "file") << "x";
  try {
    policy_trace_dir((root / "file").string(), ReducePolicy::ASYNC, 1);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create directory " + (root / "file").string()), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(root);
}

TEST(ReplayPlan, TagsPairLikeTheEngineAndCollectivesAgreePerGroup) {
  const PipelineConfig cfg = small_hsdp();
  const ProgramSet set = verified_world(cfg, ReducePolicy::ASYNC);
  ASSERT_EQ(set.programs.size(), 8u);
  const sim::CostSpec cost = sim::parse_cost_spec(cfg.extra_sections.at("cost"), cfg.num_stages());
  std::vector<RankPlan> plans;
  for (size_t p = 0; p < set.programs.size(); ++p) plans.push_back(make_plan(set, p, cfg, cost, 1 << 20));
  // (sender, receiver, tag) → the op as sent, and each receive must find its mirror there.
  std::map<std::tuple<int32_t, int32_t, int>, P2POp> sent;
  for (size_t p = 0; p < set.programs.size(); ++p)
    for (size_t k = 0; k < set.programs[p].instrs.size(); ++k) {
      const Instr& in = set.programs[p].instrs[k];
      for (size_t j = 0; j < in.p2p.size(); ++j)
        if (is_send(in.p2p[j].kind)) sent[{set.programs[p].rank.v, in.p2p[j].peer.v, plans[p].instrs[k].tags[j]}] = in.p2p[j];
    }
  size_t recvs = 0;
  for (size_t p = 0; p < set.programs.size(); ++p)
    for (size_t k = 0; k < set.programs[p].instrs.size(); ++k) {
      const Instr& in = set.programs[p].instrs[k];
      for (size_t j = 0; j < in.p2p.size(); ++j) {
        if (is_send(in.p2p[j].kind)) continue;
        const Rank self = set.programs[p].rank;
        const auto it = sent.find({in.p2p[j].peer.v, self.v, plans[p].instrs[k].tags[j]});
        ASSERT_NE(it, sent.end());
        EXPECT_EQ(it->second, mirror_of(in.p2p[j], self));
        ++recvs;
      }
    }
  EXPECT_EQ(recvs, sent.size());
  // Members of one group (same color) list the same (op, stage) at each position.
  for (int comm : {kShardComm, kReplicateComm}) {
    std::map<std::pair<int32_t, int64_t>, std::pair<CollOp, int32_t>> seen;
    for (size_t p = 0; p < set.programs.size(); ++p)
      for (size_t k = 0; k < set.programs[p].instrs.size(); ++k)
        for (const CollPhase& ph : plans[p].instrs[k].phases) {
          if (ph.comm != comm) continue;
          const auto key = std::pair{plans[p].group_color[comm], ph.seq};
          const auto val = std::pair{ph.op, set.programs[p].instrs[k].stage.v};
          const auto [it, fresh] = seen.emplace(key, val);
          if (!fresh) {
            EXPECT_EQ(it->second, val);
          }
        }
    EXPECT_FALSE(seen.empty());
  }
  EXPECT_EQ(plans[5].shard_members, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(plans[5].replicate_members, (std::vector<int32_t>{5, 7}));
  EXPECT_EQ(plans[5].dp_members, (std::vector<int32_t>{4, 5, 6, 7}));
}

TEST(ReplayMeasure, SimulatedTimingsGiveTheSimulatorsMetrics) {
  const PipelineConfig cfg = small_hsdp(
      "inline", "straggler: {tails: [{pp_rank: 1, dp_index: 3, delay_ms: 5, collectives: [reduce_grad]}]}\n");
  sim::SimOptions so;
  so.cluster = true;
  const sim::SimReport rep = sim::simulate(cfg, so);
  const ProgramSet set = verified_world(cfg, ReducePolicy::INLINE);
  const sim::CostSpec cost = sim::parse_cost_spec(cfg.extra_sections.at("cost"), cfg.num_stages());
  const sim::SimCostModel model(set, cfg, cost,
                                sim::StragglerModel(sim::parse_straggler_spec(cfg.extra_sections.at("straggler"), set.world,
                                                                              cfg.num_stages()),
                                                    set.world, 0));
  EngineOptions eo;
  eo.platform = PlatformKind::ASCEND_MINDSPORE;
  eo.cost = &model;
  const EngineResult sim_run = run_engine(set, eo);
  const EngineResult run = measured_run(set, sim_run.timing);
  const sim::PolicyRun pr = measured_policy_run(set, ReducePolicy::INLINE, run, model, {run.makespan_ms});
  const sim::SimMetrics& a = pr.metrics;
  const sim::SimMetrics& b = rep.runs.at(0).metrics;
  EXPECT_DOUBLE_EQ(a.step_time_ms, b.step_time_ms);
  EXPECT_DOUBLE_EQ(a.reduce_exposed_ms, b.reduce_exposed_ms);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) EXPECT_NEAR(a.ranks[r].compute_wait_ms, b.ranks[r].compute_wait_ms, 1e-9);
  ASSERT_EQ(a.p2p.size(), b.p2p.size());
  for (size_t k = 0; k < a.p2p.size(); ++k) EXPECT_NEAR(a.p2p[k].pp_wait_ms(), b.p2p[k].pp_wait_ms(), 1e-9) << a.p2p[k].text;
  EXPECT_EQ(a.critical_path.size(), b.critical_path.size());
}

// What --calibrate derives from a measured step (replay/overhead.h), on hand-set timings: HSDP
// 2 x 2, so a REDUCE_GRAD has (2 - 1) + 2 (2 - 1) = 3 ring steps and an UNSHARD 1.
struct FixedTransfers : CostModel {
  double batch_ms(const Program& /*p*/, const Instr& i) const override { return i.p2p.size() == 1 ? 1.0 : 3.0; }
  double collective_ms(const Program& /*p*/, const Instr& i) const override {
    return i.op == OpKind::REDUCE_GRAD ? 6.0 : 1.5;
  }
};

TEST(ReplayOverhead, FiguresOfAMeasuredStep) {
  LowerOptions lo;
  lo.expanded = true;
  const ProgramSet set = compile(small_hsdp(), lo);
  ASSERT_EQ(set.programs.size(), 8u);
  EngineResult run = measured_run(set, std::vector<std::vector<InstrTiming>>(set.programs.size()));
  int64_t one = 0, more = 0, reduces = 0, unshards = 0;
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const auto n = set.programs[p].instrs.size();
    run.timing[p].assign(n, InstrTiming{0, 0, 0, 0});
    run.timing[p].back().issue_ms = static_cast<double>(n) * 0.01 * static_cast<double>(p + 1);  // h = 0.01 (p + 1)
    for (const Instr& in : set.programs[p].instrs) {
      if (in.op == OpKind::BATCH) ++(in.p2p.size() == 1 ? one : more);
      reduces += in.op == OpKind::REDUCE_GRAD;
      unshards += in.op == OpKind::UNSHARD;
    }
  }
  run.makespan_ms = 12.5;
  const RuntimeOverhead o = overhead_of(set, run, FixedTransfers{});
  EXPECT_DOUBLE_EQ(o.step_ms, 12.5);
  EXPECT_NEAR(o.host_issue_ms, 0.04, 1e-12);  // h of ranks 0..7 is 0.01..0.08: the lower middle
  ASSERT_GT(one + more, 0);
  EXPECT_EQ(o.batches, one + more);
  const double p2p_mean = static_cast<double>(one + 3 * more) / static_cast<double>(one + more);
  EXPECT_NEAR(o.p2p_mean_ms, p2p_mean, 1e-12);
  // Only the 3 ms BATCHes exceed the mean (1 < mean < 3 when both kinds occur): more·(3 − mean) / all.
  ASSERT_GT(one, 0);
  ASSERT_GT(more, 0);
  EXPECT_NEAR(o.p2p_excess_ms, static_cast<double>(more) * (3.0 - p2p_mean) / static_cast<double>(one + more), 1e-12);
  ASSERT_GT(reduces, 0);
  ASSERT_GT(unshards, 0);
  EXPECT_EQ(o.collectives, reduces + unshards);
  // 6 ms over 3 ring steps = 2 per step; 1.5 ms over 1 step.
  EXPECT_NEAR(o.collective_step_mean_ms,
              (2.0 * static_cast<double>(reduces) + 1.5 * static_cast<double>(unshards)) /
                  static_cast<double>(reduces + unshards),
              1e-12);
  EXPECT_DOUBLE_EQ(o.collective_step_median_ms, reduces > unshards ? 2.0 : 1.5);
  // Only the reductions' 2 ms per step exceed the mean (between 1.5 and 2).
  EXPECT_NEAR(o.collective_step_excess_ms,
              static_cast<double>(reduces) * (2.0 - o.collective_step_mean_ms) / static_cast<double>(reduces + unshards),
              1e-12);
  // The floors (tolerance 0.01): with the `more` 3 ms BATCHes above m and the rest (1 ms) below,
  // E[(X − m)+] = more·(3 − m) / n = 0.01·m gives m = 3·more / (more + 0.01·n), which lies in
  // [1, 3] when more >= 0.01·n/2, as here.
  const auto n = static_cast<double>(one + more);
  const double floor_p2p = 3.0 * static_cast<double>(more) / (static_cast<double>(more) + 0.01 * n);
  ASSERT_GE(floor_p2p, 1.0);
  EXPECT_NEAR(o.p2p_floor_ms, floor_p2p, 1e-12);
  EXPECT_NEAR(o.p2p_floor_excess_ms, 0.01 * floor_p2p, 1e-12);
  const auto nc = static_cast<double>(reduces + unshards);
  const double floor_coll = 2.0 * static_cast<double>(reduces) / (static_cast<double>(reduces) + 0.01 * nc);
  ASSERT_GE(floor_coll, 1.5);
  EXPECT_NEAR(o.collective_step_floor_ms, floor_coll, 1e-12);
  EXPECT_NEAR(o.collective_step_floor_excess_ms, 0.01 * floor_coll, 1e-12);
  size_t longest = 0;
  for (const Program& p : set.programs) longest = std::max(longest, p.instrs.size());
  EXPECT_EQ(o.longest_program, static_cast<int64_t>(longest));
}

// E[max(X, m)] for the sample x: what replay's transfers average with the model at m.
double floored_mean(const std::vector<double>& x, double m) {
  double s = 0;
  for (double v : x) s += std::max(v, m);
  return s / static_cast<double>(x.size());
}

TEST(ReplayOverhead, SelfConsistentFloorOfHandDerivedSamples) {
  // {1, 1, 1, 5}, tolerance 0.1: only the 5 lies above m, (5 − m) / 4 = 0.1·m, m = 5 / 1.4.
  const std::vector<double> x = {1, 5, 1, 1};
  const double m = self_consistent_floor(x, 0.1);
  EXPECT_NEAR(m, 5.0 / 1.4, 1e-12);
  EXPECT_NEAR(floored_mean(x, m), 1.1 * m, 1e-12);  // replay's expected floored transfer, 10 % above m
  EXPECT_GT(floored_mean(x, m - 1e-6), 1.1 * (m - 1e-6));  // the least such m: just below, more than 10 %
  EXPECT_LT(floored_mean(x, m + 1e-6), 1.1 * (m + 1e-6));  // just above, less
  // Tolerance 0: the exact fixed point m = E[max(X, m)] is the largest time, ties included.
  EXPECT_DOUBLE_EQ(self_consistent_floor(x, 0.0), 5.0);
  EXPECT_DOUBLE_EQ(self_consistent_floor({2, 5, 5}, 0.0), 5.0);
  // The mean floor's bias: at the mean (2) replay still averages E[(X − 2)+] = 0.75 more.
  EXPECT_DOUBLE_EQ(floored_mean(x, 2.0) - 2.0, 0.75);
  // A constant time c: every m below c has E[(X − m)+] = c − m, so m = c / (1 + tolerance).
  EXPECT_NEAR(self_consistent_floor({2, 2, 2}, 0.01), 2.0 / 1.01, 1e-12);
  // The root in the lowest segment (every time above m): m = mean / (1 + tolerance).
  EXPECT_NEAR(self_consistent_floor({1, 2, 3}, 1.0), 1.0, 1e-12);
  // {0, 0, 0, 10}, tolerance 0.25: (10 − m) / 4 = m / 4, m = 5 (in [0, 10]).
  EXPECT_NEAR(self_consistent_floor({0, 0, 0, 10}, 0.25), 5.0, 1e-12);
  // Negative times count as 0; an empty or all-zero sample has floor 0.
  EXPECT_NEAR(self_consistent_floor({-3, -3, -3, 10}, 0.25), 5.0, 1e-12);
  EXPECT_DOUBLE_EQ(self_consistent_floor({}, 0.01), 0.0);
  EXPECT_DOUBLE_EQ(self_consistent_floor({0, 0}, 0.01), 0.0);
}

TEST(ReplayGemm, ProductIsExactAndRepsFollowTheModel) {
  Gemm g(24);
  EXPECT_EQ(g.multiply(), std::nullopt);
  EXPECT_EQ(g.multiply(), std::nullopt);  // C is cleared between multiplies
  EXPECT_GT(g.measure_ms(3), 0.0);
  EXPECT_EQ(g.reps_for(10.0, 2.0), 5);
  EXPECT_EQ(g.reps_for(11.2, 2.0), 6);   // rounded
  EXPECT_EQ(g.reps_for(0.1, 2.0), 1);    // work that costs anything runs at least once
  EXPECT_EQ(g.reps_for(0.0, 2.0), 0);
}

TEST(ReplayWorld, RefusesAProgramSetTheVerifierRejects) {
  LowerOptions once;
  once.verify_each_pass = false;
  ProgramSet set = compile(small_hsdp(), once);
  EXPECT_NO_THROW(require_verified(set, "async"));
  // Drop rank 1's first RECORD: its WAIT can never start (the event rule, then deadlock).
  auto& instrs = set.programs.at(1).instrs;
  instrs.erase(std::find_if(instrs.begin(), instrs.end(), [](const Instr& i) { return i.op == OpKind::RECORD; }));
  try {
    require_verified(set, "async");
    FAIL() << "accepted a program set the verifier rejects";
  } catch (const VerifyError& e) {
    EXPECT_FALSE(e.violations().empty());
    EXPECT_NE(std::string(e.what()).find("refusing to run"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("r1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ppstream::replay
