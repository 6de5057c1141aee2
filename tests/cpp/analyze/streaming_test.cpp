// The streaming analysis (src/analyze/analysis.h): each rank digested right after its file is
// read and its slices freed, the cross-rank part over the digests, the wait chains re-reading the
// ranks they visit. Its report equals the whole set's (read_paths + analyze) byte for byte, while
// it holds a few ranks at once, not the set.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "analyze/analysis.h"
#include "analyze/rank_source.h"
#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"
#include "ppstream/analyze/trace_writer.h"
#include "util.h"

namespace ppstream::analyze {
namespace {
namespace fs = std::filesystem;

using testing::kineto_event;
std::string ev(const std::string& cat, const std::string& name, double ts, double dur, const std::string& args) {
  return kineto_event(cat, name, ts, dur, args);
}
std::string kineto(int rank, const std::vector<std::string>& evs) {
  std::string text = R"({"distributedInfo": {"rank": )" + std::to_string(rank) + R"(}, "traceEvents": [)";
  for (size_t i = 0; i < evs.size(); ++i) text += (i ? ",\n" : "") + evs[i];
  return text + "]}";
}

constexpr int kRanks = 16;
// A 16-stage pipeline, one trace per rank (µs): rank 0 computes 1000 µs and sends to rank 1;
// rank r >= 1 posts its receive from r - 1 at 0, its compute stream waits for it (wait_on_stream
// 20) until the data arrives at e_r, computes 100 µs and sends 10 µs to r + 1. e_1 = 1010,
// e_(r+1) = e_r + 110, so rank 15 waits e_15 = 2550 µs; each wait's chain walks back rank by rank.
// Two ProfilerSteps (0-1500, 1500-3000), an all-reduce of group "0" on stream 30 at the end.
std::string pipeline_rank(int r) {
  std::vector<std::string> evs = {ev("user_annotation", "ProfilerStep#1", 0, 1500, ""),
                                  ev("user_annotation", "ProfilerStep#2", 1500, 1500, "")};
  const std::string coll = R"("stream":30,"Collective name":"allreduce","Process Group Name":"0","In msg nelems":64,"dtype":"Float")";
  const double e = 1010 + 110.0 * (r - 1);
  if (r == 0) {
    evs.push_back(ev("kernel", "gemm", 0, 1000, R"("stream":7)"));
    evs.push_back(ev("kernel", "ncclDevKernel_SendRecv", 1000, 10, R"("stream":20,"Collective name":"send","Dst Rank":1)"));
  } else {
    evs.push_back(ev("kernel", "ncclDevKernel_SendRecv", 0, e,
                     R"("stream":20,"Collective name":"recv","Src Rank":)" + std::to_string(r - 1)));
    evs.push_back(ev("cuda_sync", "Stream Wait Event", 0, e, R"("stream":7,"wait_on_stream":20)"));
    evs.push_back(ev("kernel", "gemm", e, 100, R"("stream":7)"));
    if (r + 1 < kRanks) {
      evs.push_back(ev("kernel", "ncclDevKernel_SendRecv", e + 100, 10,
                       R"("stream":20,"Collective name":"send","Dst Rank":)" + std::to_string(r + 1)));
    }
  }
  evs.push_back(ev("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 2700 + 3 * r, 200 - 3 * r, coll));
  return kineto(r, evs);
}

fs::path pipeline_set() {
  const fs::path dir = testing::temp_dir("stream_pipeline");
  for (int r = 0; r < kRanks; ++r) {
    testing::write_file(dir / ((r < 10 ? "rank_0" : "rank_") + std::to_string(r) + ".json"), pipeline_rank(r));
  }
  return dir;
}

std::string whole_set_report(const std::vector<std::string>& paths, const AnalyzeOptions& o = {}) {
  TraceSet set;
  read_paths(paths, set, 1);
  const auto r = analyze(set, o);
  return r.to_json() + "\n" + r.to_text();
}

std::string streamed_report(const std::vector<std::string>& paths, unsigned threads, detail::StreamStats* st,
                            const AnalyzeOptions& o = {}) {
  const auto r = detail::analyze_streaming(paths, o, threads, st);
  return r.to_json() + "\n" + r.to_text();
}

TEST(AnalyzeStreaming, SixteenRankSetHoldsAFewRanksAtOnce) {
  const std::string dir = pipeline_set().string();
  const std::string whole = whole_set_report({dir});
  for (unsigned threads : {1u, 2u}) {
    detail::StreamStats st;
    EXPECT_EQ(streamed_report({dir}, threads, &st), whole) << threads << " threads";
    EXPECT_EQ(st.ranks, 16u);
    EXPECT_EQ(st.freed_ranks, 16u);  // every rank's slices freed right after its digest
    EXPECT_EQ(st.held_after_read, 0u);
    // Reading: one rank per reader thread; the chains: the re-read cache and the step being explained.
    EXPECT_GE(st.peak_resident_ranks, 1u);
    EXPECT_LE(st.peak_resident_ranks, std::max<size_t>(threads, detail::RereadSource::kCachedFiles + 1))
        << threads << " threads";
    EXPECT_GT(st.rereads, 0u);  // the chains walked ranks read again from their files
  }
  // The figures the re-read ranks give: rank 15 waited e_15 = 2.55 ms; its chain walks back
  // through the ranks before it, one rank per receive → late send → compute → wait.
  const auto r = detail::analyze_streaming({dir}, {}, 2, nullptr);
  ASSERT_EQ(r.chains.size(), 3u);
  EXPECT_EQ(r.chains[0].rank, Rank(15));
  EXPECT_NEAR(r.chains[0].wait_ms, 2.55, 1e-9);
  std::set<int32_t> visited;
  for (const auto& l : r.chains[0].links) visited.insert(l.rank.v);
  EXPECT_GE(visited.size(), 8u);
  EXPECT_EQ(r.total.ranks.size(), 16u);
  // The pairing across freed ranks: rank 15's receive, posted at 0, matched when rank 14's send
  // started (e_14 + 100 = 2540 µs), the last 10 µs its transfer.
  EXPECT_NEAR(r.total.ranks[15].pp_wait_ms, 2.54, 1e-9);
  EXPECT_NEAR(r.total.ranks[15].pp_transfer_ms, 0.01, 1e-9);
}

TEST(AnalyzeStreaming, OneStepAndTheRealSampleAsTheWholeSet) {
  const fs::path dir = pipeline_set();
  fs::copy_file(testing::sample("kineto/hta-sampled_rank-1.json.gz"), dir / "sampled_1.json.gz");
  fs::remove(dir / "rank_01.json");  // the sample is rank 1
  AnalyzeOptions step;
  step.step = 2;
  const std::string whole = whole_set_report({dir.string()}), whole_step = whole_set_report({dir.string()}, step);
  for (unsigned threads : {1u, 2u}) {
    detail::StreamStats st;
    EXPECT_EQ(streamed_report({dir.string()}, threads, &st), whole) << threads;
    EXPECT_EQ(st.freed_ranks, 16u);
    EXPECT_EQ(streamed_report({dir.string()}, threads, nullptr, step), whole_step) << threads;
  }
}

// Rank 0's compute stream waits 100 µs; a reduction on another stream ends 5 µs after the wait:
// within the per-rank tolerance (20 µs) it released the wait, not within the one-clock 1 µs.
std::string ours_with_late_reduction() {
  TraceWriter w("test");
  w.slice(Rank(0), "compute", "r0 compute F mb0 s0", 0, 50, SliceKind::COMPUTE);
  w.wait(Rank(0), "compute", "reduce_done[s0]", "r0 compute WAIT reduce_done[s0]", 50, 100);
  w.slice(Rank(0), "reduce", "r0 reduce REDUCE_GRAD s0", 60, 95, SliceKind::COLLECTIVE, "replicate[0]");
  w.slice(Rank(0), "compute", "r0 compute F mb1 s0", 150, 50, SliceKind::COMPUTE);
  return w.str();
}

TEST(AnalyzeStreaming, AOneClockFileInAPerRankSetGetsTheSetsTolerance) {
  const fs::path dir = testing::temp_dir("stream_tolerance");
  const std::string ours = testing::write_file(dir / "a_ours.json", ours_with_late_reduction());
  const std::string k9 = testing::write_file(dir / "b_kineto9.json", kineto(9, {ev("kernel", "gemm", 0, 10, R"("stream":7)")}));
  // Alone, one clock: the reduction ends 5 µs after the wait, outside 1 µs: nothing exposed.
  EXPECT_NEAR(detail::analyze_streaming({ours}, {}, 1, nullptr).total.ranks.at(0).reduce_exposed_ms, 0.0, 1e-12);
  // With a Kineto rank the set has per-rank clocks: the 100 µs wait was the reduction's. The file
  // was digested before the set's tolerance was known.
  for (unsigned threads : {1u, 2u}) {
    const auto r = detail::analyze_streaming({ours, k9}, {}, threads, nullptr);
    EXPECT_NEAR(r.total.ranks.at(0).reduce_exposed_ms, 0.1, 1e-12) << threads;
    EXPECT_EQ(r.to_json() + "\n" + r.to_text(), whole_set_report({ours, k9}));
  }
}

std::string error_of(const std::vector<std::string>& paths, unsigned threads) {
  try {
    detail::analyze_streaming(paths, {}, threads, nullptr);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

TEST(AnalyzeStreaming, FirstErrorInListOrder) {
  const fs::path dir = testing::temp_dir("stream_errors");
  const std::string good = testing::write_file(dir / "a.json", pipeline_rank(0));
  const std::string cut = testing::write_file(dir / "b.json", pipeline_rank(1).substr(0, 300));
  const std::string dup = testing::write_file(dir / "c.json", pipeline_rank(0));
  const std::string missing = (dir / "none.json").string();
  for (const auto& paths : std::vector<std::vector<std::string>>{{good, cut, missing}, {good, dup, cut}, {good, missing}}) {
    std::string whole;
    try {
      TraceSet set;
      read_paths(paths, set, 1);
    } catch (const TraceError& e) {
      whole = e.what();
    }
    ASSERT_FALSE(whole.empty());
    EXPECT_EQ(error_of(paths, 1), whole);
    EXPECT_EQ(error_of(paths, 2), whole);
  }
  EXPECT_NE(error_of({good, cut, missing}, 2).find("b.json"), std::string::npos);
}

TEST(AnalyzeStreaming, AFileChangedBeforeItsRereadIsAnError) {
  const fs::path dir = testing::temp_dir("stream_changed");
  const std::string path = testing::write_file(dir / "r.json", pipeline_rank(3));
  TraceSet set;
  read_paths({path}, set, 1);
  std::vector<detail::RankDigest> ranks{detail::digest_rank(set.ranks.at(0), set.strings, {})};
  ranks[0].freed = true;
  detail::ResidentRanks resident;
  {
    detail::RereadSource same(set, ranks, &resident);
    EXPECT_EQ(same.view(Rank(3)).tl->slices.size(), set.ranks[0].slices.size());
    EXPECT_EQ(resident.now(), 1u);  // the cached file
  }
  EXPECT_EQ(resident.now(), 0u);
  testing::write_file(path, kineto(3, {ev("kernel", "gemm", 0, 10, R"("stream":7)")}));
  detail::RereadSource changed(set, ranks, &resident);
  try {
    changed.view(Rank(3));
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("r.json: changed while it was analyzed: rank 3 had"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ppstream::analyze
