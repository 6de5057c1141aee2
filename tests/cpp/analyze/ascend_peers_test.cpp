// Ascend Level1+ profiles: P2P peers from the HCCL "Plane N" lanes (src rank / dst rank), so a
// receive pairs with its peer's send and pp_wait_ms crosses ranks. Hand-made two-rank profile.
#include <gtest/gtest.h>

#include <string>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"
#include "util.h"

namespace ppstream::analyze {
namespace {

// A rank directory: one AI Core kernel on Stream 2, one HCCL op and a Plane task inside it.
std::string rank_dir(const std::filesystem::path& root, int rank, const std::string& op, int op_ts, int op_dur) {
  auto dir = root / ("rank" + std::to_string(rank) + "_ascend_pt");
  testing::write_file(dir / ("profiler_info_" + std::to_string(rank) + ".json"), "{\"rank_id\": " + std::to_string(rank) + "}");
  const std::string tv = std::string("[") +
      R"({"ph":"M","name":"process_name","pid":10,"tid":0,"args":{"name":"Ascend Hardware"}},)" +
      R"({"ph":"M","name":"process_name","pid":20,"tid":0,"args":{"name":"HCCL"}},)" +
      R"({"ph":"M","name":"thread_name","pid":20,"tid":0,"args":{"name":"Group 1 Communication"}},)" +
      R"({"ph":"M","name":"thread_name","pid":20,"tid":1,"args":{"name":"Plane 0"}},)" +
      R"({"ph":"X","name":"MatMul","pid":10,"tid":2,"ts":"0","dur":40,"args":{"Task Type":"AI_CORE"}},)" +
      R"({"ph":"X","name":")" + op + R"(","pid":20,"tid":0,"ts":")" + std::to_string(op_ts) + R"(","dur":)" +
      std::to_string(op_dur) + R"(,"args":{"count":1024,"data_type":"FP32"}},)" +
      R"({"ph":"X","name":"RDMASend","pid":20,"tid":1,"ts":"150","dur":10,"args":{"src rank":0,"dst rank":1}}])";
  testing::write_file(dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json", tv);
  return dir.string();
}

TEST(AnalyzeAscend, PlaneLanesNameP2PPeersAndPairSendWithReceive) {
  auto root = testing::temp_dir("planes");
  rank_dir(root, 0, "hcom_send__1_0_1", 100, 100);     // send [100, 200) µs
  rank_dir(root, 1, "hcom_receive__1_0_1", 50, 160);   // receive [50, 210) µs
  TraceSet set;
  read_paths({root.string()}, set);
  ASSERT_EQ(set.ranks.size(), 2u);
  auto p2p = [&](int r) -> const Slice& {
    for (const auto& s : set.ranks.at(r).slices) {
      if (s.kind == SliceKind::P2P) return s;
    }
    throw std::runtime_error("no p2p slice");
  };
  ASSERT_EQ(p2p(0).p2p.size(), 1u);
  EXPECT_EQ(p2p(0).p2p[0].dir, P2PDir::SEND);
  EXPECT_EQ(p2p(0).p2p[0].peer, Rank(1));
  EXPECT_EQ(p2p(0).bytes, 4096u);  // count 1024 × FP32
  ASSERT_EQ(p2p(1).p2p.size(), 1u);
  EXPECT_EQ(p2p(1).p2p[0].dir, P2PDir::RECV);
  EXPECT_EQ(p2p(1).p2p[0].peer, Rank(0));
  auto r = analyze(set);
  const auto& m1 = r.total.ranks.at(1);
  EXPECT_EQ(m1.p2p_recvs, 1);
  EXPECT_EQ(m1.p2p_unpaired, 0);
  // Clocks aligned on the ends (receive end − send end = 10 µs): the send starts at 110 µs on
  // rank 1's clock, 60 µs after the receive was posted.
  EXPECT_NEAR(m1.pp_wait_ms, 0.060, 1e-9);
}

TEST(AnalyzeAscend, CommunicationJsonRecordsJoinTheirLaneOp) {
  auto root = testing::temp_dir("join");
  auto dir = rank_dir(root, 0, "hcom_send__1_0_1", 100, 100);
  testing::write_file(std::filesystem::path(dir) / "ASCEND_PROFILER_OUTPUT" / "communication.json",
                      R"J({"step1": {"p2p": {"hcom_send__1_0_1@77": {"Communication Time Info": {"Elapse Time(ms)": 0.1,
                          "Transit Time(ms)": 0.05, "Wait Time(ms)": 0.04}}}}})J");
  TraceSet set;
  read_paths({dir}, set);
  ASSERT_EQ(set.comm_ops.size(), 1u);
  const auto& rec = set.comm_ops[0];
  EXPECT_EQ(rec.rank, "0");  // from profiler_info_0.json
  EXPECT_EQ(rec.lane_group, "Group 1");
  EXPECT_EQ(rec.lane_bytes, 4096u);
  ASSERT_TRUE(rec.lane_ms.has_value());
  EXPECT_NEAR(*rec.lane_ms, 0.100, 1e-12);
  EXPECT_NEAR(rec.wait_ms, 0.04, 1e-12);
}

}  // namespace
}  // namespace ppstream::analyze
