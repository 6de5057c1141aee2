// The parallel reader (src/analyze/read_parallel.h): a set read on several threads gives the same
// report, byte for byte, as the same set read on one thread, and the same first error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"
#include "util.h"

namespace ppstream::analyze {
namespace {
namespace fs = std::filesystem;

std::string ev(const std::string& cat, const std::string& name, int64_t ts, int64_t dur, const std::string& args) {
  return R"({"ph":"X","cat":")" + cat + R"(","name":")" + name + R"(","pid":0,"tid":7,"ts":)" + std::to_string(ts) +
         R"(,"dur":)" + std::to_string(dur) + R"(,"args":{)" + args + "}}";
}

// A small Kineto trace of rank `r`: names shared by all ranks and names of its own (so string ids
// depend on the order files are merged in), two steps, an all-reduce whose duration depends on
// the rank (stragglers), and `dropped` kernels with a negative duration (notes, capped at 5 per set).
std::string rank_trace(int r, int dropped, bool with_rank = true) {
  std::vector<std::string> evs = {
      ev("user_annotation", "ProfilerStep#1", 0, 100, ""),
      ev("user_annotation", "ProfilerStep#2", 100, 100, ""),
      ev("kernel", "gemm_common", 5, 30, R"("stream":7)"),
      ev("kernel", "gemm_rank_" + std::to_string(r), 40, 20 + r, R"("stream":7)"),
      ev("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 50, 40 - 3 * (r % 5),
         R"("stream":20,"Collective name":"allreduce","Process Group Name":"0","In msg nelems":1024,"dtype":"Float")"),
      ev("kernel", "gemm_common", 110, 30, R"("stream":7)"),
      ev("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 150, 20 + r % 3,
         R"("stream":20,"Collective name":"allreduce","Process Group Name":"0","In msg nelems":1024,"dtype":"Float")"),
  };
  for (int d = 0; d < dropped; ++d) evs.push_back(ev("kernel", "corrupt_" + std::to_string(r), 60 + d, -5, R"("stream":7)"));
  std::string text = with_rank ? R"({"distributedInfo": {"rank": )" + std::to_string(r) + R"(}, "traceEvents": [)"
                               : R"({"traceEvents": [)";
  for (size_t i = 0; i < evs.size(); ++i) text += (i ? ",\n" : "") + evs[i];
  return text + "]}";
}

std::string report(const std::vector<std::string>& paths, unsigned threads) {
  TraceSet set;
  read_paths(paths, set, threads);
  const auto r = analyze(set);
  return r.to_json() + "\n" + r.to_text();
}

std::string error_of(const std::vector<std::string>& paths, unsigned threads) {
  try {
    TraceSet set;
    read_paths(paths, set, threads);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

TEST(AnalyzeParallel, ManyRanksSameReportOnOneAndSeveralThreads) {
  const fs::path dir = testing::temp_dir("parallel_many");
  // Ranks 2..10 and the sample's rank 1 (read last: "sampled" sorts after "rank_"). 7 dropped
  // events over ranks 3, 4 and 6: the 5-note cap falls inside rank 4's file.
  for (int r = 2; r <= 10; ++r) {
    testing::write_file(dir / ("rank_" + std::to_string(r) + ".json"), rank_trace(r, r == 3 ? 2 : r == 4 ? 4 : r == 6 ? 1 : 0));
  }
  fs::copy_file(testing::sample("kineto/hta-sampled_rank-1.json.gz"), dir / "sampled_1.json.gz");
  // A file naming no rank would be rank 0 (a duplicate): in its own directory, read after the set.
  const fs::path other = testing::temp_dir("parallel_norank");
  testing::write_file(other / "norank.json", rank_trace(20, 1, false));
  const std::string one = report({dir.string()}, 1);
  EXPECT_NE(one.find("7 events dropped"), std::string::npos);
  TraceSet two;
  read_paths({dir.string()}, two, 2);
  ASSERT_EQ(two.ranks.size(), 10u);
  EXPECT_EQ(two.notes.size(), 5u);  // the first 5 dropped events named
  for (const auto& tl : two.ranks) {  // every slice's name id names its own kernel
    for (const auto& sl : tl.slices) {
      const std::string& n = two.strings.str(sl.name);
      if (n.starts_with("gemm_rank_")) {
        EXPECT_EQ(n, "gemm_rank_" + std::to_string(tl.rank.v));
      }
    }
  }
  for (unsigned t : {2u, 3u, 8u}) EXPECT_EQ(report({dir.string()}, t), one) << t << " threads";
  // Directories and files mixed, the 'no rank' note after the drop notes of the run.
  const std::vector<std::string> mixed = {(dir / "rank_3.json").string(), dir.string()};
  EXPECT_EQ(error_of(mixed, 2), error_of(mixed, 1));
  EXPECT_NE(error_of(mixed, 1).find("rank 3 is already loaded"), std::string::npos);
  const std::vector<std::string> two_dirs = {(dir / "rank_5.json").string(), (dir / "rank_6.json").string(),
                                             other.string()};
  EXPECT_EQ(report(two_dirs, 2), report(two_dirs, 1));
}

TEST(AnalyzeParallel, FirstErrorInListOrder) {
  const fs::path dir = testing::temp_dir("parallel_errors");
  const std::string good = testing::write_file(dir / "a.json", rank_trace(0, 0));
  const std::string cut = testing::write_file(dir / "b.json", rank_trace(1, 0).substr(0, 300));
  const std::string dup = testing::write_file(dir / "c.json", rank_trace(0, 0));
  const std::string missing = (dir / "none.json").string();
  for (const auto& paths : std::vector<std::vector<std::string>>{
           {good, cut, missing}, {good, missing, cut}, {good, dup, cut}, {cut, good, dup}}) {
    const std::string one = error_of(paths, 1);
    ASSERT_FALSE(one.empty());
    EXPECT_EQ(error_of(paths, 2), one);
  }
  EXPECT_NE(error_of({good, cut, missing}, 2).find("b.json"), std::string::npos);
}

TEST(AnalyzeParallel, ThreadCountFromTheEnvironment) {
  const fs::path dir = testing::temp_dir("parallel_env");
  const std::string a = testing::write_file(dir / "a.json", rank_trace(0, 0));
  ::setenv("PPSTREAM_THREADS", "two", 1);
  TraceSet set;
  try {
    read_paths({a}, set);
    ADD_FAILURE() << "PPSTREAM_THREADS=two accepted";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("PPSTREAM_THREADS=two: expected a positive integer"), std::string::npos);
  }
  ::setenv("PPSTREAM_THREADS", "1", 1);
  TraceSet one;
  read_paths({a}, one);
  EXPECT_EQ(one.ranks.size(), 1u);
  ::unsetenv("PPSTREAM_THREADS");
}

}  // namespace
}  // namespace ppstream::analyze
