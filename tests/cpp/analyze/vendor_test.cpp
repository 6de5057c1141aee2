// Real vendor profiles: the Ascend lane model against the producer's own step_trace_time.csv
// (msinsight-level0), summary-only directories, and Kineto steps by launch against HTA's figures
// (tests/data/hta/expected.json, produced by scripts/hta_check.py --emit-expected).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"
#include "util.h"

namespace ppstream::analyze {
namespace {
namespace fs = std::filesystem;
using testing::sample;

const RankMetrics& rank_of(const StepMetrics& s, int r) {
  auto it = std::find_if(s.ranks.begin(), s.ranks.end(), [&](const RankMetrics& m) { return m.rank == Rank(r); });
  if (it == s.ranks.end()) throw std::runtime_error("rank missing");
  return *it;
}

// A copy of a level0 rank directory without its step_trace_time.csv: the figures must come from
// the timeline.
fs::path without_csv(int rank) {
  const std::string name = "rank" + std::to_string(rank) + "_ascend_pt";
  auto src = fs::path(sample("ascend/msinsight-level0")) / name;
  auto dst = testing::temp_dir("level0_nocsv_" + std::to_string(rank)) / name;
  fs::create_directories(dst / "ASCEND_PROFILER_OUTPUT");
  fs::copy_file(src / ("profiler_info_" + std::to_string(rank) + ".json"),
                dst / ("profiler_info_" + std::to_string(rank) + ".json"));
  fs::copy_file(src / "ASCEND_PROFILER_OUTPUT/trace_view.json.gz", dst / "ASCEND_PROFILER_OUTPUT/trace_view.json.gz");
  return dst;
}

TEST(AnalyzeAscend, Level0ColumnsMatchProducerWithoutItsCsv) {
  for (int rank : {0, 1}) {
    const auto dir = without_csv(rank);
    const auto r = analyze_paths({dir.string()});
    ASSERT_TRUE(r.vendor.empty());  // the CSV is not there: nothing can be echoed
    ASSERT_EQ(r.steps.size(), 1u);
    EXPECT_EQ(r.steps[0].step, 50);
    const auto& m = rank_of(r.steps[0], rank);
    // The producer's own figures for this rank (µs), read from its CSV.
    TraceSet csv;
    read_step_trace_csv(sample("ascend/msinsight-level0/rank" + std::to_string(rank) +
                               "_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv"),
                        "torch_npu", csv);
    ASSERT_EQ(csv.step_trace.size(), 1u);
    const auto& row = csv.step_trace[0];
    auto near = [&](double ours_ms, const char* col) {
      const double theirs = *row.get(col) / 1000.0;
      EXPECT_NEAR(ours_ms, theirs, 0.01 * theirs) << "rank " << rank << " " << col;
    };
    near(m.compute_ms, "Computing");
    near(m.comm_ms, "Communication");
    near(m.comm_not_overlapped_ms, "Communication(Not Overlapped)");
    near(m.overlapped_ms, "Overlapped");
    near(m.free_ms, "Free");
    near(m.device_step_ms, "Stage");
    near(*m.preparing_ms, "Preparing");
    fs::remove_all(dir.parent_path());
  }
}

TEST(AnalyzeAscend, Level0LaneModelComputeStreamWaitsForAllReduces) {
  const auto r = analyze_paths({sample("ascend/msinsight-level0")});
  ASSERT_EQ(r.total.ranks.size(), 2u);
  ASSERT_EQ(r.vendor.empty(), false);  // the producer's CSV rows are reported beside ours
  // Σ EVENT_WAIT_SQE on Stream 2 (µs, from the files): 72303.105 (rank 0), 55248.764 (rank 1).
  const double waits[2] = {72.303105, 55.248764};
  for (int rank : {0, 1}) {
    const auto& m = rank_of(r.total, rank);
    EXPECT_EQ(m.compute_stream, "Stream 2");  // the AI Core stream, not the HCCL stream 4
    EXPECT_NEAR(m.compute_wait_ms, waits[rank], 1e-5);
    // Every compute-stream wait but a few sub-µs ones ends when an all-reduce does.
    EXPECT_NEAR(m.reduce_exposed_ms, waits[rank], 1e-4);
    EXPECT_NEAR(m.reduce_comm_ms, m.comm_ms, 1e-3);
    EXPECT_GT(m.reduce_comm_ms, 60.0);
    ASSERT_TRUE(m.reduce_overlap_ratio.has_value());
    EXPECT_GT(*m.reduce_overlap_ratio, 0.0);
  }
  // Four all-reduces per rank on the "Group 0 Communication" lane, group "Group 0".
  const auto& g = rank_of(r.total, 0).overlap;
  auto it = std::find_if(g.begin(), g.end(), [](const OverlapMetrics& o) { return o.group == "Group 0"; });
  ASSERT_NE(it, g.end());
  EXPECT_NEAR(it->comm_ms, 85.516889, 1e-3);
  // The longest wait's chain names the all-reduce that released it.
  ASSERT_FALSE(r.chains.empty());
  const auto& c = r.chains[0];
  EXPECT_EQ(c.rank, Rank(0));
  bool names_all_reduce = std::any_of(c.links.begin(), c.links.end(), [](const ChainLink& l) {
    return l.what.find("hcom_allReduce__868_0_1") != std::string::npos;
  });
  EXPECT_TRUE(names_all_reduce) << r.to_text();
}

TEST(AnalyzeAscend, Level0HcclTasksAreCommunicationNeverCompute) {
  TraceSet set;
  read_paths({sample("ascend/msinsight-level0/rank0_ascend_pt")}, set);
  const auto& tl = set.ranks.at(0);
  size_t hccl_compute = 0, lane_ops = 0;
  for (const auto& s : tl.slices) {
    const auto& stream = tl.streams[s.stream].name;
    if (stream == "Stream 4" && s.kind == SliceKind::COMPUTE) ++hccl_compute;
    if (stream == "HCCL Group 0 Communication") ++lane_ops;
  }
  EXPECT_EQ(hccl_compute, 0u);
  EXPECT_EQ(lane_ops, 4u);
}

TEST(AnalyzeAscend, SummaryOnlyDirectoryReportsProducerFiguresAndPeers) {
  const auto r = analyze_paths({sample("ascend/msinsight-p2p-summary")});
  EXPECT_TRUE(r.total.ranks.empty());
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(),
                          [](const std::string& n) { return n.find("summary only") != std::string::npos; }));
  auto send = std::find_if(r.comm_ops.begin(), r.comm_ops.end(), [](const CommOpRecord& c) {
    return c.op.rfind("hcom_send__822_0", 0) == 0 && c.rank == "0";
  });
  ASSERT_NE(send, r.comm_ops.end());
  EXPECT_NEAR(send->elapse_ms, 0.89648691015625, 1e-12);
  EXPECT_NEAR(send->transit_ms, 0.86381540625, 1e-12);
  EXPECT_NEAR(send->wait_ms, 0.0, 1e-12);
  auto peer = std::find_if(r.comm_links.begin(), r.comm_links.end(), [](const CommLinkRecord& l) {
    return l.kind == "p2p" && l.rank == "1" && l.src != l.dst;
  });
  ASSERT_NE(peer, r.comm_links.end());
  EXPECT_EQ(peer->src, 1);
  EXPECT_EQ(peer->dst, 9);
  EXPECT_EQ(peer->transport, "RDMA");
  EXPECT_EQ(r.vendor.empty(), false);
}

nlohmann::json hta_expected() {
  std::ifstream in(sample("hta/expected.json"));
  return nlohmann::json::parse(in);
}

TEST(AnalyzeKineto, HtaWindowOverlapEqualsHta) {
  const auto exp = hta_expected();
  for (const auto& [file, e] : exp.at("files").items()) {
    const auto r = analyze_paths({sample("kineto/" + file)});
    ASSERT_TRUE(r.hta_window.has_value()) << file;
    for (const auto& [rank, pct] : e.at("overlap_pct").items()) {
      const auto& m = rank_of(*r.hta_window, std::stoi(rank));
      ASSERT_TRUE(m.overlap[0].ratio.has_value());
      EXPECT_NEAR(100.0 * *m.overlap[0].ratio, pct.get<double>(), 0.5)
          << file << " rank " << rank << " (HTA " << exp.at("hta_version") << ")";
    }
  }
}

TEST(AnalyzeKineto, StepMembershipByLaunchEqualsHta) {
  const auto exp = hta_expected();
  for (const auto& [file, e] : exp.at("files").items()) {
    TraceSet set;
    read_paths({sample("kineto/" + file)}, set);
    for (const auto& [rank, iters] : e.at("device_events").items()) {
      const auto& tl = *std::find_if(set.ranks.begin(), set.ranks.end(),
                                     [&](const RankTimeline& t) { return t.rank == Rank(std::stoi(rank)); });
      for (const auto& [iter, cats] : iters.items()) {
        const int64_t step = std::stoll(iter);
        size_t kernels = 0, memory = 0;
        for (const auto& s : tl.slices) {
          if (!s.step || tl.steps[*s.step].step != step) continue;
          if (s.kind == SliceKind::MEMORY) ++memory;
          else if (s.kind == SliceKind::COMPUTE || s.kind == SliceKind::P2P || s.kind == SliceKind::COLLECTIVE) ++kernels;
        }
        auto count = [&](const char* cat) { return cats.contains(cat) ? cats.at(cat).at("count").get<size_t>() : 0u; };
        EXPECT_EQ(kernels, count("kernel")) << file << " step " << step;
        EXPECT_EQ(memory, count("gpu_memcpy") + count("gpu_memset")) << file << " step " << step;
      }
    }
  }
}

}  // namespace
}  // namespace ppstream::analyze

namespace ppstream::analyze {
namespace {

TEST(AnalyzeMindSpore, CpuOpProfileIsComputeWithCollectivesByName) {
  // tests/data/mindspore-cpu: 2 ranks, scripts/make_ms_cpu_profile.py (µs values from its files).
  const auto r = analyze_paths({testing::sample("mindspore-cpu")});
  ASSERT_EQ(r.total.ranks.size(), 2u);
  const auto& r0 = rank_of(r.total, 0);  // rank from FRAMEWORK/cpu_framework_0.txt
  EXPECT_EQ(r0.compute_stream, "CPU OP 0");
  EXPECT_NEAR(r0.compute_ms, (122190.0 + 6105.51 + 49.601 + 21.65) / 1e3, 1e-9);  // MatMul ×2, ReLU ×2
  // Default/AllReduce-op0 ×2 and Default/AllGather-op0 ×2, one after another.
  EXPECT_NEAR(r0.comm_ms, (395515.0 + 41137.8 + 31697.4 + 21381.0) / 1e3, 1e-9);
  EXPECT_NEAR(r0.reduce_comm_ms, (395515.0 + 41137.8) / 1e3, 1e-9);
  const auto& r1 = rank_of(r.total, 1);
  EXPECT_NEAR(r1.compute_ms, (280115.0 + 28107.3 + 58.15 + 14.064 + 14.857 + 13.114) / 1e3, 1e-9);
  TraceSet set;
  read_paths({testing::sample("mindspore-cpu")}, set);
  for (const auto& tl : set.ranks) {
    for (const auto& s : tl.slices) EXPECT_NE(set.strings.str(s.name), "Default");  // the scope range is not an op
  }
}

}  // namespace
}  // namespace ppstream::analyze
