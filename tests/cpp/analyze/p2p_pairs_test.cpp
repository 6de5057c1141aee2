// Per-channel FIFO pairing of P2P ops and pp_wait_ms = recv issued → matched, on hand-built traces.
#include <gtest/gtest.h>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/trace_writer.h"
#include "util.h"

namespace ppstream::analyze {
namespace {

AnalysisResult run(const std::string& name, const TraceWriter& w) {
  auto p = testing::write_file(testing::temp_dir(name) / "t.json", w.str());
  return analyze_paths({p});
}

const RankMetrics& rank_of(const AnalysisResult& a, Rank r) {
  for (const auto& m : a.total.ranks)
    if (m.rank == r) return m;
  throw std::runtime_error("rank missing");
}

// r1 posts two sends to r0 on the B channel in one batch (VPP: two stages on one channel);
// r0 receives them in two batches. Times in µs; the global clock.
TraceWriter two_ops(bool consistent) {
  TraceWriter w("test");
  w.slice(Rank(1), "p2p.0", "r1 p2p.0 BATCH{SEND_B mb3 s5 ->r0; SEND_B mb4 s1 ->r0}", 300, 50, SliceKind::P2P);
  w.slice(Rank(0), "p2p.0", consistent ? "r0 p2p.0 BATCH{RECV_B mb3 s4 <-r1}" : "r0 p2p.0 BATCH{RECV_B mb4 s0 <-r1}",
          100, 250, SliceKind::P2P);
  w.slice(Rank(0), "p2p.0", consistent ? "r0 p2p.0 BATCH{RECV_B mb4 s0 <-r1}" : "r0 p2p.0 BATCH{RECV_B mb3 s4 <-r1}",
          360, 10, SliceKind::P2P);
  return w;
}

TEST(AnalyzeP2PPairs, WaitIsIssuedToMatchedPerOp) {
  auto a = run("p2p_pairs_ok", two_ops(true));
  const auto& r0 = rank_of(a, Rank(0));
  // First receive posted at 100 µs, its send (op 1 of r1's batch) at 300 µs: 0.2 ms wait,
  // 0.05 ms transfer. Second posted at 360 µs after the send: no wait, 0.01 ms transfer.
  EXPECT_NEAR(r0.pp_wait_ms, 0.2, 1e-9);
  EXPECT_NEAR(r0.pp_transfer_ms, 0.06, 1e-9);
  EXPECT_EQ(r0.p2p_recvs, 2);
  EXPECT_EQ(r0.p2p_unpaired, 0);
  EXPECT_EQ(rank_of(a, Rank(1)).pp_wait_ms, 0.0);  // sends only
}

TEST(AnalyzeP2PPairs, InconsistentChannelOrderIsATraceError) {
  try {
    run("p2p_pairs_bad", two_ops(false));
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("P2P channel r1->r0 (B)"), std::string::npos) << m;
    EXPECT_NE(m.find("RECV_B mb4 s0 <-r1"), std::string::npos) << m;
    EXPECT_NE(m.find("SEND_B mb3 s5 ->r0"), std::string::npos) << m;
    EXPECT_NE(m.find("inconsistent"), std::string::npos) << m;
  }
}

TEST(AnalyzeP2PPairs, UnpairedReceiveCountsWhole) {
  TraceWriter w("test");
  w.slice(Rank(0), "p2p.0", "r0 p2p.0 BATCH{RECV_F mb0 s1 <-r3}", 100, 40, SliceKind::P2P);
  auto a = run("p2p_pairs_unpaired", w);
  const auto& r0 = rank_of(a, Rank(0));
  EXPECT_NEAR(r0.pp_wait_ms, 0.04, 1e-9);
  EXPECT_EQ(r0.p2p_unpaired, 1);
}

}  // namespace
}  // namespace ppstream::analyze
