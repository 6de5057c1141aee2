// Ascend P2P peers, hand-made two-rank profiles: at Level1+ from the HCCL "Plane N" lanes (src
// rank / dst rank); at Level0 from communication_matrix.json links (group-local ranks) mapped to
// global ranks through profiler_metadata.json's rank list and joined with the lane's send /
// receive ops. Either way a receive pairs with its peer's send and pp_wait_ms crosses ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"
#include "util.h"

namespace ppstream::analyze {
namespace {

// A rank directory: one AI Core kernel on Stream 2, one HCCL op and (Level1+) a Plane task inside it.
std::string rank_dir(const std::filesystem::path& root, int rank, const std::string& op, int op_ts, int op_dur,
                     bool plane = true) {
  auto dir = root / ("rank" + std::to_string(rank) + "_ascend_pt");
  testing::write_file(dir / ("profiler_info_" + std::to_string(rank) + ".json"), "{\"rank_id\": " + std::to_string(rank) + "}");
  const std::string tv = std::string("[") +
      R"({"ph":"M","name":"process_name","pid":10,"tid":0,"args":{"name":"Ascend Hardware"}},)" +
      R"({"ph":"M","name":"process_name","pid":20,"tid":0,"args":{"name":"HCCL"}},)" +
      R"({"ph":"M","name":"thread_name","pid":20,"tid":0,"args":{"name":"Group 1 Communication"}},)" +
      R"({"ph":"M","name":"thread_name","pid":20,"tid":1,"args":{"name":"Plane 0"}},)" +
      R"({"ph":"X","name":"MatMul","pid":10,"tid":2,"ts":"0","dur":40,"args":{"Task Type":"AI_CORE"}},)" +
      R"({"ph":"X","name":")" + op + R"(","pid":20,"tid":0,"ts":")" + std::to_string(op_ts) + R"(","dur":)" +
      std::to_string(op_dur) + R"(,"args":{"count":1024,"data_type":"FP32"}})" +
      (plane ? R"(,{"ph":"X","name":"RDMASend","pid":20,"tid":1,"ts":"150","dur":10,"args":{"src rank":0,"dst rank":1}}])"
             : "]");
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

// Level0 (no Plane lanes): group "pp" of global ranks 5 and 3 (listed unsorted; group-local rank
// i is the i-th smallest, as msprof-analyze maps them). The matrix names the group by
// msprof-analyze's double_hash of its id: 8557218874045301532 for "10.0.0.1%eth0_60000_0_1"
// (computed with msprof_analyze.cluster_analyse.common_func.utils.double_hash).
void level0_pair(const std::filesystem::path& root, bool with_rank_list) {
  const std::string id = "10.0.0.1%eth0_60000_0_1";
  const std::string meta = R"({"parallel_group_info": {")" + id +
                           R"(": {"group_name": "pp", "group_rank": 0, "global_ranks": [5, 3]}}})";
  const std::string link = R"J("Transport Type": "HCCS", "Transit Size(MB)": 0.004096, "Transit Time(ms)": 0.09, "Bandwidth(GB/s)": 0.0455)J";
  for (auto [rank, op, ts, dur] : {std::tuple{3, "hcom_send__1_0_1", 100, 100}, std::tuple{5, "hcom_receive__1_0_1", 50, 160}}) {
    std::filesystem::path dir = rank_dir(root, rank, op, ts, dur, /*plane=*/false);
    const std::string me = rank == 3 ? "0" : "1";
    testing::write_file(dir / "ASCEND_PROFILER_OUTPUT" / "communication_matrix.json",
                        std::string(R"({"step1": {"p2p": {")") + op + R"(@8557218874045301532": {")" + me + "-" + me +
                            R"(": {"Transport Type": "LOCAL"}, "0-1": {)" + link + "}}}}}");
    if (with_rank_list) testing::write_file(dir / "profiler_metadata.json", meta);
  }
}

const Slice& p2p_slice(const TraceSet& set, size_t i) {
  for (const auto& s : set.ranks.at(i).slices) {
    if (s.kind == SliceKind::P2P) return s;
  }
  throw std::runtime_error("no p2p slice");
}

TEST(AnalyzeAscend, MatrixLinksMapToGlobalRanksAndJoinTheLaneSendReceive) {
  auto root = testing::temp_dir("level0_peers");
  level0_pair(root, true);
  TraceSet set;
  read_paths({root.string()}, set);
  ASSERT_EQ(set.parallel_groups.size(), 1u);
  EXPECT_EQ(set.parallel_groups[0].hash, "8557218874045301532");
  EXPECT_EQ(set.parallel_groups[0].global_ranks, (std::vector<int64_t>{3, 5}));
  int peers = 0;
  for (const auto& l : set.comm_links) {
    if (l.src == l.dst) continue;
    ++peers;
    ASSERT_TRUE(l.src_global && l.dst_global) << l.op;
    EXPECT_EQ(*l.src_global, 3);
    EXPECT_EQ(*l.dst_global, 5);
    ASSERT_TRUE(l.lane_ms) << l.op;  // joined with the lane op of its rank
    EXPECT_NEAR(*l.lane_ms, l.rank == "3" ? 0.100 : 0.160, 1e-12);
  }
  EXPECT_EQ(peers, 2);
  ASSERT_EQ(set.ranks.size(), 2u);
  ASSERT_EQ(p2p_slice(set, 0).p2p.size(), 1u);
  EXPECT_EQ(p2p_slice(set, 0).p2p[0].dir, P2PDir::SEND);
  EXPECT_EQ(p2p_slice(set, 0).p2p[0].peer, Rank(5));
  ASSERT_EQ(p2p_slice(set, 1).p2p.size(), 1u);
  EXPECT_EQ(p2p_slice(set, 1).p2p[0].dir, P2PDir::RECV);
  EXPECT_EQ(p2p_slice(set, 1).p2p[0].peer, Rank(3));
  auto r = analyze(set);
  const auto& m5 = r.total.ranks.at(1);
  EXPECT_EQ(m5.rank, Rank(5));
  EXPECT_EQ(m5.p2p_recvs, 1);
  EXPECT_EQ(m5.p2p_unpaired, 0);
  EXPECT_NEAR(m5.pp_wait_ms, 0.060, 1e-9);  // as with Plane peers: the send starts 60 µs after the receive
  const std::string text = r.to_text();
  EXPECT_NE(text.find("3 → 5 global"), std::string::npos) << text;
}

TEST(AnalyzeAscend, MatrixLinksWithoutARankListStayGroupLocal) {
  auto root = testing::temp_dir("level0_local");
  level0_pair(root, false);
  TraceSet set;
  read_paths({root.string()}, set);
  for (const auto& l : set.comm_links) {
    EXPECT_FALSE(l.src_global.has_value()) << l.op;
    EXPECT_FALSE(l.dst_global.has_value()) << l.op;
    EXPECT_TRUE(l.lane_ms.has_value()) << l.op;  // still joined by name
  }
  EXPECT_TRUE(p2p_slice(set, 0).p2p.empty());  // no peer guessed
  EXPECT_TRUE(p2p_slice(set, 1).p2p.empty());
  auto r = analyze(set);
  const std::string text = r.to_text();
  EXPECT_NE(text.find("0 → 1 group-local"), std::string::npos) << text;
  EXPECT_EQ(text.find("3 → 5"), std::string::npos) << text;  // no global ranks invented
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(),
                          [](const std::string& n) { return n.find("group-local") != std::string::npos; }));
}

TEST(AnalyzeAscend, RankListOfTheWrongSizeKeepsTheLinkGroupLocalWithANote) {
  auto root = testing::temp_dir("level0_short");
  level0_pair(root, false);
  testing::write_file(root / "rank3_ascend_pt" / "profiler_metadata.json",
                      R"({"parallel_group_info": {"10.0.0.1%eth0_60000_0_1": {"group_name": "pp", "global_ranks": [3]}}})");
  TraceSet set;
  read_paths({root.string()}, set);
  for (const auto& l : set.comm_links) {
    if (l.src != l.dst) {
      EXPECT_FALSE(l.dst_global.has_value()) << l.op;
    }
  }
  EXPECT_TRUE(std::any_of(set.notes.begin(), set.notes.end(),
                          [](const std::string& n) { return n.find("has 1 ranks") != std::string::npos; }));
}

}  // namespace
}  // namespace ppstream::analyze
