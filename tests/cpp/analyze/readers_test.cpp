// Readers against the public samples: counts and values taken from the files themselves.
#include <gtest/gtest.h>

#include <algorithm>

#include "ppstream/analyze/readers.h"
#include "util.h"

namespace ppstream::analyze {
namespace {
using testing::sample;

size_t count_kind(const RankTimeline& tl, SliceKind k) {
  return static_cast<size_t>(std::count_if(tl.slices.begin(), tl.slices.end(), [&](const Slice& s) { return s.kind == k; }));
}

TEST(AnalyzeReaders, KinetoSampledRank1) {
  TraceSet set;
  read_paths({sample("kineto/hta-sampled_rank-1.json.gz")}, set);
  ASSERT_EQ(set.ranks.size(), 1u);
  const auto& tl = set.ranks[0];
  EXPECT_EQ(tl.rank, Rank(1));  // distributedInfo.rank
  // 1104 kernels (10 of them ncclKernel_SendRecv), 40 memcpy, 10 memset.
  EXPECT_EQ(count_kind(tl, SliceKind::P2P), 10u);
  EXPECT_EQ(count_kind(tl, SliceKind::COMPUTE), 1094u);
  EXPECT_EQ(count_kind(tl, SliceKind::MEMORY), 50u);
  ASSERT_EQ(tl.steps.size(), 2u);
  EXPECT_EQ(tl.steps[0].step, 551);
  EXPECT_EQ(tl.steps[0].end_ns - tl.steps[0].start_ns, 607904000);  // "dur": 607904.0
  EXPECT_EQ(tl.steps[1].step, 552);
}

TEST(AnalyzeReaders, KinetoNcclArgs) {
  TraceSet set;
  read_paths({sample("kineto/hta-nccl_data.json.gz")}, set);
  ASSERT_EQ(set.ranks.size(), 1u);
  const auto& tl = set.ranks[0];
  EXPECT_EQ(count_kind(tl, SliceKind::COLLECTIVE), 21u);  // 15 AllReduce + 6 Broadcast
  EXPECT_EQ(count_kind(tl, SliceKind::P2P), 0u);
  auto first = std::find_if(tl.slices.begin(), tl.slices.end(), [](const Slice& s) { return s.kind == SliceKind::COLLECTIVE; });
  ASSERT_NE(first, tl.slices.end());
  EXPECT_EQ(set.strings.str(first->group), "0");  // Process Group Name
  EXPECT_EQ(tl.steps.size(), 3u);                 // ProfilerStep#4..6
  // The AllReduce at ts 4458677009853.422 µs: 6637568 floats, 2636.669 µs.
  auto ar = std::find_if(tl.slices.begin(), tl.slices.end(), [](const Slice& s) { return s.start_ns == 4458677009853422; });
  ASSERT_NE(ar, tl.slices.end());
  EXPECT_EQ(ar->bytes, 6637568u * 4u);
  EXPECT_EQ(ar->dur_ns, 2636669);
}

TEST(AnalyzeReaders, KinetoCudaSyncStreamWait) {
  TraceSet set;
  read_paths({sample("kineto/hta-event_sync_multi_stream.json.gz")}, set);
  const auto& tl = set.ranks.at(0);
  ASSERT_EQ(count_kind(tl, SliceKind::STREAM_WAIT), 1u);  // "Stream Wait Event" on stream 24
  auto w = std::find_if(tl.slices.begin(), tl.slices.end(), [](const Slice& s) { return s.kind == SliceKind::STREAM_WAIT; });
  EXPECT_EQ(tl.streams[w->stream].id, 24);
  EXPECT_EQ(w->dur_ns, 2000);
  EXPECT_EQ(count_kind(tl, SliceKind::HOST), 4u);  // Event Sync ×3, Context Sync ×1
  EXPECT_EQ(count_kind(tl, SliceKind::COMPUTE), 3u);
}

TEST(AnalyzeReaders, AscendTraceView) {
  TraceSet set;
  read_paths({sample("ascend/mstt-trace_view.json.gz")}, set);
  ASSERT_EQ(set.ranks.size(), 1u);
  const auto& tl = set.ranks[0];
  EXPECT_EQ(tl.slices.size(), 276u);  // "Ascend Hardware" tasks
  ASSERT_EQ(tl.streams.size(), 1u);
  EXPECT_EQ(tl.streams[0].name, "Stream 3");
  ASSERT_EQ(tl.steps.size(), 1u);  // ProfilerStep#1, dur 14091.97 µs (ts given as a string)
  EXPECT_EQ(tl.steps[0].end_ns - tl.steps[0].start_ns, 14091970);
  EXPECT_EQ(tl.slices.front().start_ns, 1704161511422904204);  // "1704161511422904.204"
  EXPECT_FALSE(set.notes.empty());  // no rank in a bare trace_view.json: said, not silent
}

TEST(AnalyzeReaders, AscendClusterFiles) {
  TraceSet set;
  read_paths({sample("ascend/mstt-cluster_step_trace_time.csv"), sample("ascend/mstt-cluster_communication.json")}, set);
  ASSERT_EQ(set.step_trace.size(), 9u);  // 8 ranks + 1 stage row
  EXPECT_EQ(set.step_trace[0].type, "rank");
  EXPECT_EQ(set.step_trace[0].index, "0");
  EXPECT_NEAR(*set.step_trace[0].get("Computing"), 80309.68717187493, 1e-9);
  EXPECT_NEAR(*set.step_trace[5].get("Communication(Not Overlapped)"), 756374.86, 1e-9);
  EXPECT_EQ(set.step_trace[8].type, "stage");
  EXPECT_EQ(set.step_trace[8].index, "(0, 1, 2, 3, 4, 5, 6, 7)");
  EXPECT_EQ(*set.step_trace[8].get("Bubble"), 0.0);
  ASSERT_EQ(set.comm_ops.size(), 4u);  // 2 broadcasts × 2 ranks in group (0, 1)
  EXPECT_EQ(set.comm_ops[0].group, "(0, 1)");
  EXPECT_EQ(set.comm_ops[0].op, "hcom_broadcast__501_0@6297232067196334501");
  EXPECT_EQ(set.comm_ops[0].rank, "0");
  EXPECT_NEAR(set.comm_ops[0].wait_ms, 115.96064153125, 1e-12);
  EXPECT_NEAR(set.comm_ops[0].elapse_ms, 121.73694384375, 1e-12);
}

TEST(AnalyzeReaders, AscendProfilerDirectory) {
  auto dir = testing::temp_dir("ascend_dir") / "node0_123_ascend_pt";
  auto out = dir / "ASCEND_PROFILER_OUTPUT";
  std::filesystem::create_directories(out);
  std::filesystem::create_symlink(sample("ascend/mstt-trace_view.json.gz"), out / "trace_view.json");
  testing::write_file(dir / "profiler_info_3.json", "{\"rank_id\": 3}");
  testing::write_file(out / "step_trace_time.csv",
                      "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble\n"
                      "1,1788.25,0,0,0,9481.67,14091.97,12.5\n");
  TraceSet set;
  read_paths({dir.string()}, set);
  ASSERT_EQ(set.ranks.size(), 1u);
  EXPECT_EQ(set.ranks[0].rank, Rank(3));
  ASSERT_EQ(set.step_trace.size(), 1u);
  EXPECT_EQ(set.step_trace[0].producer, "torch_npu");
  EXPECT_EQ(set.step_trace[0].index, "3");
  EXPECT_EQ(*set.step_trace[0].get("Bubble"), 12.5);
}

TEST(AnalyzeReaders, ErrorsNameFileOffsetAndExpectation) {
  auto d = testing::temp_dir("errors");
  auto bad = testing::write_file(d / "bad.json", "{\"traceEvents\": [{\"ph\":\"X\",\"ts\":1,\"dur\":2,}]}");
  TraceSet s1;
  try {
    read_paths({bad}, s1);
    FAIL() << "malformed JSON accepted";
  } catch (const TraceError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("bad.json"), std::string::npos) << m;
    EXPECT_NE(m.find("event #0"), std::string::npos) << m;
  }
  auto host = testing::write_file(d / "host.json",
                                  "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":2}]}");
  TraceSet s2;
  try {
    read_paths({host}, s2);
    FAIL() << "host-only trace accepted";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("no device lanes"), std::string::npos) << e.what();
  }
  auto kind = testing::write_file(d / "kind.json",
                                  "{\"traceEvents\": [{\"ph\":\"X\",\"name\":\"x\",\"pid\":0,\"tid\":0,\"ts\":1,\"dur\":2,"
                                  "\"args\":{\"kind\":\"gemm\"}}]}");
  TraceSet s3;
  try {
    read_paths({kind}, s3);
    FAIL() << "unknown kind accepted";
  } catch (const TraceError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("kind.json"), std::string::npos) << m;
    EXPECT_NE(m.find("'gemm'"), std::string::npos) << m;
    EXPECT_NE(m.find("byte 17"), std::string::npos) << m;
  }
  auto other = testing::write_file(d / "other.json", "{\"foo\": 1}");
  TraceSet s4;
  EXPECT_THROW(read_paths({other}, s4), TraceError);
  TraceSet s5;
  EXPECT_THROW(read_paths({(d / "missing.json").string()}, s5), TraceError);
}

}  // namespace
}  // namespace ppstream::analyze
