// Metrics: overlap on the Kineto samples (HTA's figures), hand-made traces with hand-derived
// values, the wait chain and the diff.
#include <gtest/gtest.h>

#include <algorithm>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"
#include "ppstream/analyze/trace_format.h"
#include "scenario.h"
#include "util.h"

namespace ppstream::analyze {
namespace {
using testing::sample;

const RankMetrics& rank_of(const StepMetrics& s, int r) {
  auto it = std::find_if(s.ranks.begin(), s.ranks.end(), [&](const RankMetrics& m) { return m.rank == Rank(r); });
  EXPECT_NE(it, s.ranks.end());
  return *it;
}

TEST(AnalyzeMetrics, KinetoOverlapMatchesHta) {
  // HTA's get_comm_comp_overlap on these files (its default drops the last profiler step, so
  // only step 551 remains): rank 0 11.81 %, rank 1 20.05 %.
  AnalyzeOptions o;
  o.step = 551;
  auto r0 = analyze_paths({sample("kineto/hta-sampled_rank-0.json.gz")}, o);
  auto r1 = analyze_paths({sample("kineto/hta-sampled_rank-1.json.gz")}, o);
  EXPECT_NEAR(*rank_of(r0.total, 0).overlap[0].ratio * 100, 11.81, 0.5);
  EXPECT_NEAR(*rank_of(r1.total, 1).overlap[0].ratio * 100, 20.05, 0.5);
  EXPECT_EQ(rank_of(r0.total, 0).overlap[1].comm_ms, 0.0);  // no collectives: all P2P
}

TEST(AnalyzeMetrics, AscendComputeMatchesProducerOverlapLane) {
  // The producer's "Overlap Analysis / Computing" lane sums to 1788.2505 µs.
  auto r = analyze_paths({sample("ascend/mstt-trace_view.json.gz")});
  EXPECT_NEAR(rank_of(r.total, 0).compute_ms, 1.7882505, 0.0005);
  EXPECT_NEAR(r.steps.at(0).step_time_ms, 14.09197, 1e-9);
}

TEST(AnalyzeMetrics, StepSelectionNeedsMarkers) {
  AnalyzeOptions o;
  o.step = 7;
  try {
    analyze_paths({sample("kineto/hta-nccl_data.json.gz")}, o);
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("[4, 5, 6]"), std::string::npos) << e.what();
  }
}

TraceSet load(const std::string& name, const std::string& text) {
  auto p = testing::write_file(testing::temp_dir(name) / "t.json", text);
  TraceSet set;
  read_paths({p}, set);
  return set;
}

TEST(AnalyzeMetrics, HandMadeLegacyValues) {
  auto set = load("legacy", testing::legacy_trace());
  EXPECT_TRUE(set.global_clock);
  auto r = analyze(set);
  EXPECT_NEAR(r.total.step_time_ms, 0.870, 1e-9);  // makespan 0 → 870 µs
  const auto& r1 = rank_of(r.total, 1);
  EXPECT_EQ(r1.pp_rank, 1);
  EXPECT_EQ(r1.compute_stream, "compute");
  EXPECT_NEAR(r1.compute_wait_ms, 0.710, 1e-9);
  // Receive posted at 60 µs, r2's send at 760 µs: waits 700 µs, then 10 µs of transfer.
  EXPECT_NEAR(r1.pp_wait_ms, 0.700, 1e-9);
  EXPECT_NEAR(r1.pp_transfer_ms, 0.010, 1e-9);
  const auto& r2 = rank_of(r.total, 2);
  EXPECT_NEAR(r2.compute_wait_ms, 0.560, 1e-9);
  EXPECT_NEAR(r2.stream_wait_ms, 0.560 + 0.145, 1e-9);
  EXPECT_NEAR(r2.compute_ms, 0.150, 1e-9);         // [0,50] ∪ [610,710]
  EXPECT_NEAR(r2.reduce_exposed_ms, 0.050, 1e-9);  // reduction [710,760] overlaps no compute
  EXPECT_NEAR(*r2.reduce_overlap_ratio, 0.0, 1e-12);
  const auto& r3 = rank_of(r.total, 3);
  EXPECT_NEAR(r3.reduce_exposed_ms, 0.500, 1e-9);
  // P2P overlap on rank 2: recv [50,610] ∪ send [760,770] = 570 µs; compute overlaps [50,50]…
  EXPECT_NEAR(rank_of(r.total, 2).overlap[2].comm_ms, 0.570, 1e-9);
  EXPECT_NEAR(rank_of(r.total, 2).overlap[2].overlap_ms, 0.0, 1e-9);
  ASSERT_EQ(r.producer_metrics.size(), 1u);
}

TEST(AnalyzeMetrics, WaitChainNamesRanks321) {
  auto r = analyze(load("chain", testing::legacy_trace()));
  ASSERT_FALSE(r.chains.empty());
  const auto& c = r.chains[0];
  EXPECT_EQ(c.rank, Rank(1));
  EXPECT_NEAR(c.wait_ms, 0.710, 1e-9);
  std::vector<int32_t> ranks;
  for (const auto& l : c.links) {
    if (ranks.empty() || ranks.back() != l.rank.v) ranks.push_back(l.rank.v);
  }
  EXPECT_EQ(ranks, (std::vector<int32_t>{1, 2, 3})) << r.to_text();
  // rank 2's send went 700 µs after rank 1 posted its receive; rank 3's 550 µs after rank 2's.
  auto late = [&](int rank) {
    for (const auto& l : c.links) {
      if (l.rank == Rank(rank) && l.reason.find("send was issued") != std::string::npos) return l.delay_ms;
    }
    return -1.0;
  };
  EXPECT_NEAR(late(2), 0.700, 1e-9);
  EXPECT_NEAR(late(3), 0.550, 1e-9);
  EXPECT_NE(c.links.back().reason.find("replicate[3]"), std::string::npos) << r.to_text();
}

TEST(AnalyzeMetrics, DiffLegacyToAsync) {
  auto d = diff(analyze(load("diff_a", testing::legacy_trace())), analyze(load("diff_b", testing::async_trace())));
  auto row = [&](const std::string& scope, const std::string& metric) {
    auto it = std::find_if(d.rows.begin(), d.rows.end(), [&](const DiffRow& x) { return x.scope == scope && x.metric == metric; });
    EXPECT_NE(it, d.rows.end()) << scope << " " << metric;
    return *it;
  };
  auto all = row("all", "step_time_ms");
  EXPECT_NEAR(*all.baseline, 0.870, 1e-9);
  EXPECT_NEAR(*all.optimized, 0.600, 1e-9);  // async: rank 3's reduction ends last, at 600 µs
  EXPECT_NEAR(*all.change, -0.270, 1e-9);
  auto w1 = row("rank 1", "compute_wait_ms");
  EXPECT_NEAR(*w1.change, 0.160 - 0.710, 1e-9);
  auto s1 = row("stage 1", "compute_wait_ms");
  EXPECT_NEAR(*s1.optimized, 0.160, 1e-9);
  auto ov3 = row("rank 3", "reduce_overlap_ratio");  // async reduction overlaps nothing here either
  EXPECT_NEAR(*ov3.baseline, 0.0, 1e-12);
  EXPECT_FALSE(d.to_json().empty());
}

TEST(AnalyzeFormat, BatchPartsAndWriterRoundTrip) {
  auto parts = trace_format::parse_batch_parts("r3 p2p.2 BATCH{SEND_B mb15 s7 ->r2; RECV_B mb12 s3 <-r0}");
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].dir, P2PDir::SEND);
  EXPECT_EQ(parts[0].peer, Rank(2));
  EXPECT_EQ(parts[0].phase, 'B');
  EXPECT_EQ(parts[1].dir, P2PDir::RECV);
  EXPECT_EQ(parts[1].peer, Rank(0));
  EXPECT_THROW(trace_format::parse_batch_parts("BATCH{SEND_B mb1 s1}"), TraceError);

  TraceWriter w("test");
  w.slice(Rank(5), "p2p.1", "r5 p2p.1 BATCH{SEND_F mb0 s5 ->r6}", 1.5, 2.25, SliceKind::P2P, "", 1024);
  w.wait(Rank(5), "compute", "recv_F[mb0,s5]", "r5 compute WAIT recv_F[mb0,s5]", 0.001, 1.0);
  w.step(Rank(5), 0, 0, 10);
  auto set = load("roundtrip", w.str());
  ASSERT_EQ(set.ranks.size(), 1u);
  const auto& tl = set.ranks[0];
  EXPECT_EQ(tl.rank, Rank(5));
  ASSERT_EQ(tl.slices.size(), 2u);
  EXPECT_EQ(tl.slices[0].kind, SliceKind::STREAM_WAIT);
  EXPECT_EQ(tl.slices[0].start_ns, 1);
  EXPECT_EQ(set.strings.str(tl.slices[0].event), "recv_F[mb0,s5]");
  EXPECT_EQ(tl.streams[tl.slices[0].stream].name, "compute");
  EXPECT_EQ(tl.slices[1].start_ns, 1500);
  EXPECT_EQ(tl.slices[1].dur_ns, 2250);
  EXPECT_EQ(tl.slices[1].bytes, 1024u);
  ASSERT_EQ(tl.slices[1].p2p.size(), 1u);
  EXPECT_EQ(tl.slices[1].p2p[0].phase, 'F');
  ASSERT_EQ(tl.steps.size(), 1u);
  EXPECT_EQ(tl.steps[0].end_ns, 10000);
}

}  // namespace
}  // namespace ppstream::analyze
