// Stragglers on a hand-made three-rank trace with hand-derived values: rank 2 computes late
// into group B, so rank 1 waits at B and arrives late at A, where rank 0 waits for it.
#include <gtest/gtest.h>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"
#include "ppstream/analyze/trace_writer.h"
#include "util.h"

namespace ppstream::analyze {
namespace {

TEST(AnalyzeStragglers, ChainCrossesGroupsToTheRankThatWasLate) {
  TraceWriter w("handmade", true);  // µs
  w.slice(Rank(2), "compute", "r2 compute B mb0 s2", 0, 500, SliceKind::COMPUTE);
  w.slice(Rank(2), "comm", "allreduce B", 500, 100, SliceKind::COLLECTIVE, "B");
  w.slice(Rank(1), "comm", "allreduce B", 100, 500, SliceKind::COLLECTIVE, "B");
  w.slice(Rank(1), "comm", "allreduce A", 600, 100, SliceKind::COLLECTIVE, "A");
  w.slice(Rank(0), "comm", "allreduce A", 150, 550, SliceKind::COLLECTIVE, "A");
  auto path = testing::write_file(testing::temp_dir("stragglers") / "t.json", w.str());
  auto r = analyze_paths({path});
  ASSERT_EQ(r.skews.size(), 2u);
  EXPECT_EQ(r.skews[0].group, "A");  // largest first: 550 − 100 µs
  EXPECT_EQ(r.skews[0].first_rank, Rank(0));
  EXPECT_EQ(r.skews[0].last_rank, Rank(1));
  EXPECT_NEAR(r.skews[0].skew_ms, 0.450, 1e-12);
  EXPECT_EQ(r.skews[1].group, "B");
  EXPECT_EQ(r.skews[1].last_rank, Rank(2));
  EXPECT_NEAR(r.skews[1].skew_ms, 0.400, 1e-12);
  ASSERT_EQ(r.straggler_chain.size(), 2u) << r.to_text();
  EXPECT_EQ(r.straggler_chain[0].waiter, Rank(0));
  EXPECT_EQ(r.straggler_chain[0].waited_for, Rank(1));
  EXPECT_NEAR(r.straggler_chain[0].wait_ms, 0.450, 1e-12);
  EXPECT_EQ(r.straggler_chain[1].waiter, Rank(1));
  EXPECT_EQ(r.straggler_chain[1].group, "B");
  EXPECT_EQ(r.straggler_chain[1].waited_for, Rank(2));
  EXPECT_NEAR(r.straggler_chain[1].wait_ms, 0.400, 1e-12);
  // Slow ranks: rank 1 in A (caused 450 µs), rank 2 in B (400 µs).
  auto find = [&](const char* g, int rank) {
    for (const auto& s : r.slow_ranks) {
      if (s.group == g && s.rank == Rank(rank)) return s;
    }
    return SlowRank{};
  };
  EXPECT_EQ(find("A", 1).last, 1);
  EXPECT_NEAR(find("A", 1).caused_wait_ms, 0.450, 1e-12);
  EXPECT_NEAR(find("B", 2).caused_wait_ms, 0.400, 1e-12);
  EXPECT_NEAR(find("B", 1).late_ms, 0.0, 1e-12);
}

TEST(AnalyzeStragglers, Level0RankOneArrivesLateAtTheFirstAllReduce) {
  // Durations of hcom_allReduce__868_0_1: 72994.438 µs (rank 0), 56083.6… µs (rank 1): rank 1
  // arrived 16.911 ms after rank 0 — the same as the start difference on the two clocks.
  auto r = analyze_paths({testing::sample("ascend/msinsight-level0")});
  ASSERT_FALSE(r.skews.empty());
  EXPECT_EQ(r.skews[0].op, "hcom_allReduce__868_0_1");
  EXPECT_EQ(r.skews[0].last_rank, Rank(1));
  EXPECT_NEAR(r.skews[0].skew_ms, 16.911, 0.001);
}

}  // namespace
}  // namespace ppstream::analyze
