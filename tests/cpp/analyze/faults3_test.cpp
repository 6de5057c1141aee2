// The analyzer faults of issue 20, each rebuilt from its public report as a small Kineto input
// with its hand-derived value: a stream wait attributed by the stream its event was recorded on
// (kineto PR #808, HTA PR #121), correlation id 0 (ROCm/roctracer#100), several devices in one
// trace, ranks whose clocks start at different origins (kineto PR #919).
#include <gtest/gtest.h>

#include <string>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"
#include "util.h"

namespace ppstream::analyze {
namespace {

// One Kineto event; `args` is the text inside the args object.
std::string ev(const std::string& cat, const std::string& name, double ts, double dur, const std::string& args,
               int pid = 0, int tid = 7) {
  return R"({"ph":"X","cat":")" + cat + R"(","name":")" + name + R"(","pid":)" + std::to_string(pid) +
         R"(,"tid":)" + std::to_string(tid) + R"(,"ts":)" + std::to_string(ts) + R"(,"dur":)" + std::to_string(dur) +
         R"(,"args":{)" + args + "}}";
}
std::string trace(const std::string& events, const std::string& rank = R"("distributedInfo": {"rank": 0}, )") {
  return "{" + rank + R"("traceEvents": [)" + events + "]}";
}

AnalysisResult analyze_text(const std::string& name, const std::string& text) {
  return analyze_paths({testing::write_file(testing::temp_dir(name) / (name + ".json"), text)});
}

// The issue's case: the compute stream (7) waits for an event recorded on the all-reduce's
// stream (20) after the all-reduce; an all-gather prefetch on stream 24 started earlier and ends
// 10 µs after it, within the 20 µs per-rank tolerance, so timing alone picks the all-gather.
std::string reduce_vs_prefetch(const std::string& wait_args) {
  return trace(ev("kernel", "gemm", 0, 1000, R"("stream":7,"correlation":1)") + "," +
               ev("kernel", "ncclKernel_AllGather_RING_LL_Sum_float", 500, 910, R"("stream":24,"correlation":2)") + "," +
               ev("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 600, 800, R"("stream":20,"correlation":3)") + "," +
               ev("cuda_sync", "Stream Wait Event", 1000, 400, R"("stream":7,"correlation":5)" + wait_args) + "," +
               ev("kernel", "gemm_after", 1400, 100, R"("stream":7,"correlation":6)") + "," +
               ev("cuda_runtime", "cudaLaunchKernel", 1, 1, R"("correlation":1)", 0, 1) + "," +
               ev("cuda_runtime", "cudaLaunchKernel", 2, 1, R"("correlation":2)", 0, 1) + "," +
               ev("cuda_runtime", "cudaLaunchKernel", 3, 1, R"("correlation":3)", 0, 1) + "," +
               ev("cuda_runtime", "cudaEventRecord", 4, 1, R"("correlation":4)", 0, 1) + "," +
               ev("cuda_runtime", "cudaStreamWaitEvent", 5, 1, R"("correlation":5)", 0, 1) + "," +
               ev("cuda_runtime", "cudaLaunchKernel", 6, 1, R"("correlation":6)", 0, 1));
}

const ChainLink& released_by(const AnalysisResult& r) {
  EXPECT_FALSE(r.chains.empty());
  EXPECT_GE(r.chains.at(0).links.size(), 2u);
  return r.chains.at(0).links.at(1);
}

TEST(AnalyzeFaults3, StreamWaitAttributedByTheStreamItsEventWasRecordedOn) {
  auto r = analyze_text("wait_stream", reduce_vs_prefetch(R"(,"wait_on_stream":20,"wait_on_cuda_event_record_corr_id":-1)"));
  const auto& m = r.total.ranks.at(0);
  EXPECT_NEAR(m.reduce_exposed_ms, 0.4, 1e-9);  // the 400 µs wait, released by the all-reduce
  EXPECT_EQ(m.waits_by_stream, 1);
  EXPECT_EQ(m.waits_by_timing, 0);
  EXPECT_EQ(released_by(r).what, "ncclKernel_AllReduce_RING_LL_Sum_float");
  EXPECT_EQ(released_by(r).attributed_by, WaitRule::STREAM);
  EXPECT_NE(r.to_json().find(R"("attributed_by": "stream")"), std::string::npos);
  EXPECT_NE(r.to_text().find("(wait attributed by stream)"), std::string::npos);
}

TEST(AnalyzeFaults3, StreamWaitAttributedByItsEventRecordCall) {
  // cudaEventRecord (correlation 4) at 4 µs: the last kernel launched on stream 20 before it is
  // the all-reduce (launched at 3 µs).
  auto r = analyze_text("wait_record", reduce_vs_prefetch(R"(,"wait_on_stream":20,"wait_on_cuda_event_record_corr_id":4)"));
  EXPECT_NEAR(r.total.ranks.at(0).reduce_exposed_ms, 0.4, 1e-9);
  EXPECT_EQ(r.total.ranks.at(0).waits_by_record, 1);
  EXPECT_EQ(released_by(r).what, "ncclKernel_AllReduce_RING_LL_Sum_float");
  EXPECT_EQ(released_by(r).attributed_by, WaitRule::RECORD);
}

TEST(AnalyzeFaults3, StreamWaitWithoutItsSourceIsAttributedByTiming) {
  // wait_on_stream -1 (Kineto could not resolve the record): timing decides, and says so.
  auto r = analyze_text("wait_timing", reduce_vs_prefetch(R"(,"wait_on_stream":-1)"));
  EXPECT_EQ(r.total.ranks.at(0).reduce_exposed_ms, 0.0);
  EXPECT_EQ(r.total.ranks.at(0).waits_by_timing, 1);
  EXPECT_EQ(released_by(r).what, "ncclKernel_AllGather_RING_LL_Sum_float");
  EXPECT_EQ(released_by(r).attributed_by, WaitRule::TIMING);
}

TEST(AnalyzeFaults3, HtaEventSyncSampleAttributesItsWaitByTheRecord) {
  // HTA's event-sync test trace (HTA PR #121's repro, tests/data/NOTICE.md): a matmul on stream
  // 20, an event recorded on stream 20, stream 24 waits for it. The wait names the record
  // (wait_on_stream 20, its cudaEventRecord correlation): released by the matmul on stream 20.
  auto r = analyze_paths({testing::sample("kineto/hta-event_sync_multi_stream.json.gz")});
  ASSERT_EQ(r.total.ranks.size(), 1u);
  EXPECT_EQ(r.total.ranks[0].waits_by_record, 1);
  EXPECT_EQ(r.total.ranks[0].waits_by_timing, 0);
  ASSERT_FALSE(r.chains.empty());
  const ChainLink& by = released_by(r);
  EXPECT_EQ(by.stream, "stream 20");
  EXPECT_EQ(by.what, "ampere_sgemm_128x64_nn");
  EXPECT_EQ(by.attributed_by, WaitRule::RECORD);
}

TEST(AnalyzeFaults3, CorrelationZeroIsNoCorrelation) {
  // ROCm: every collective kernel carries correlation 0, one here a negative id. They are placed
  // by start: the all-reduce at 120 µs in step 2, the one at 20 µs in step 1.
  const std::string steps =
      ev("user_annotation", "ProfilerStep#1", 0, 100, "", 0, 1) + "," + ev("user_annotation", "ProfilerStep#2", 100, 100, "", 0, 1);
  auto r = analyze_text("corr0", trace(steps + "," + ev("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 120, 30,
                                                        R"("stream":20,"correlation":0)") +
                                       "," + ev("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 20, 10,
                                                R"("stream":20,"correlation":-3)") +
                                       "," + ev("kernel", "gemm", 100, 50, R"("stream":7,"correlation":9)") + "," +
                                       ev("cuda_runtime", "cudaLaunchKernel", 101, 1, R"("correlation":9)", 0, 1)));
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_NEAR(r.steps.at(0).ranks.at(0).comm_ms, 0.010, 1e-12);
  EXPECT_NEAR(r.steps.at(1).ranks.at(0).comm_ms, 0.030, 1e-12);
  bool noted = false;
  for (const auto& n : r.notes) noted |= n.find("2 device slice(s) carry correlation id 0 or negative") != std::string::npos;
  EXPECT_TRUE(noted);
}

// A one-process pipeline: kernels of GPUs 0 and 1 in one trace, both on "stream 7", one step of
// 300 µs; each GPU computes 200 µs of it (idle a third of the step).
std::string two_devices(const std::string& rank) {
  return trace(ev("user_annotation", "ProfilerStep#1", 0, 300, "", 9, 1) + "," +
                   ev("kernel", "gemm0", 0, 200, R"("stream":7,"device":0)", 0) + "," +
                   ev("kernel", "gemm1", 100, 200, R"("stream":7,"device":1)", 1),
               rank);
}

TEST(AnalyzeFaults3, DevicesOfOneTraceAreRanksWhenTheTraceNamesNone) {
  auto r = analyze_text("devices", two_devices(""));
  ASSERT_EQ(r.steps.size(), 1u);
  ASSERT_EQ(r.steps.at(0).ranks.size(), 2u);
  for (const auto& m : r.steps.at(0).ranks) {
    EXPECT_NEAR(m.compute_ms, 0.2, 1e-12);
    EXPECT_NEAR(m.bubble_ratio, 1.0 / 3.0, 1e-9) << m.rank.v;
  }
  EXPECT_EQ(r.steps.at(0).ranks.at(1).rank, Rank(1));
}

TEST(AnalyzeFaults3, DevicesOfOneRanksTraceAreRefusedNamingThem) {
  try {
    analyze_text("devices_rank", two_devices(R"("distributedInfo": {"rank": 3}, )"));
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("device slices of 2 devices (0, 1) in the trace of rank 3"), std::string::npos)
        << e.what();
  }
}

// Rank 0 sends to rank 1 800 µs late; rank 1's compute stream waits for the receive. `shift_us`
// moves rank 1's whole clock.
std::string p2p_rank(int rank, double shift_us) {
  const double t = shift_us;
  if (rank == 0) {
    return trace(ev("kernel", "gemm", 0, 1000, R"("stream":7)") + "," +
                 ev("kernel", "ncclDevKernel_SendRecv", 1000, 100, R"("stream":20,"Collective name":"send","Dst Rank":1)"));
  }
  return trace(ev("kernel", "ncclDevKernel_SendRecv", t + 200, 900, R"("stream":20,"Collective name":"recv","Src Rank":0)") +
                   "," + ev("cuda_sync", "Stream Wait Event", t + 210, 890, R"("stream":7,"wait_on_stream":20)") + "," +
                   ev("kernel", "gemm", t + 1100, 400, R"("stream":7)"),
               R"("distributedInfo": {"rank": 1}, )");
}

AnalysisResult two_ranks(double shift_us) {
  const auto dir = testing::temp_dir("clocks");
  return analyze_paths({testing::write_file(dir / "r0.json", p2p_rank(0, 0)),
                        testing::write_file(dir / "r1.json", p2p_rank(1, shift_us))});
}

TEST(AnalyzeFaults3, ShiftingOneRanksClockChangesNoFigure) {
  const auto base = two_ranks(0), shifted = two_ranks(4e6);  // rank 1's clock 4 s ahead
  EXPECT_EQ(shifted.clock_base, "p2p");
  ASSERT_FALSE(shifted.chains.empty());
  EXPECT_NEAR(shifted.chains.at(0).at_ms, 0.210, 1e-9);  // the wait's start, on rank 0's clock
  ASSERT_FALSE(shifted.longest_pp_waits.empty());
  EXPECT_NEAR(shifted.longest_pp_waits.at(0).start_ms, 0.200, 1e-9);
  for (const auto& l : shifted.chains.at(0).links) EXPECT_LT(l.at_ms, 2.0) << l.reason;
  EXPECT_EQ(base.to_json(), shifted.to_json());
  EXPECT_EQ(base.to_text(), shifted.to_text());
}

TEST(AnalyzeFaults3, RanksWithoutACommonBaseArePositionedFromTheirOwnStart) {
  // No P2P between the ranks and no base time: each rank's positions start at its own 0.
  const auto dir = testing::temp_dir("own_start");
  auto r = analyze_paths(
      {testing::write_file(dir / "r0.json", trace(ev("kernel", "gemm", 5e6, 100, R"("stream":7)"))),
       testing::write_file(dir / "r1.json", trace(ev("cuda_sync", "Stream Wait Event", 4e6 + 10, 50, R"("stream":7)") + "," +
                                                       ev("kernel", "gemm", 4e6 + 60, 10, R"("stream":7)") + "," +
                                                       ev("kernel", "copy", 4e6, 60, R"("stream":9)"),
                                                   R"("distributedInfo": {"rank": 1}, )"))});
  EXPECT_EQ(r.clock_base, "own_start");
  ASSERT_FALSE(r.chains.empty());
  EXPECT_NEAR(r.chains.at(0).at_ms, 0.010, 1e-9);
  EXPECT_NE(r.to_text().find("positions (at ms) on one base: each rank's own first device slice"), std::string::npos);
}

TEST(AnalyzeFaults3, BaseTimesPutRanksOnOneClock) {
  // Kineto baseTimeNanoseconds: rank 1's ts 0 is 3 ms after rank 0's.
  const auto dir = testing::temp_dir("base_time");
  auto r = analyze_paths(
      {testing::write_file(dir / "r0.json", trace(ev("kernel", "gemm", 0, 100, R"("stream":7)"),
                                                  R"("distributedInfo": {"rank": 0}, "baseTimeNanoseconds": 1000000000, )")),
       testing::write_file(dir / "r1.json", trace(ev("cuda_sync", "Stream Wait Event", 10, 50, R"("stream":7)") + "," +
                                                       ev("kernel", "gemm", 60, 10, R"("stream":7)") + "," +
                                                       ev("kernel", "copy", 0, 60, R"("stream":9)"),
                                                   R"("distributedInfo": {"rank": 1}, "baseTimeNanoseconds": 1003000000, )"))});
  EXPECT_EQ(r.clock_base, "base_time");
  ASSERT_FALSE(r.chains.empty());
  EXPECT_NEAR(r.chains.at(0).at_ms, 3.010, 1e-9);
}

}  // namespace
}  // namespace ppstream::analyze
