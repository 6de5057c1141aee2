// The analyze reader faults of breaker5 (F3, F4, F5, F6, F14), each rebuilt from a sample of
// tests/data: an older PyTorch's Kineto categories, a Megatron timeline with TP > 1 lanes, one that
// lost a DP rank's ops, one split into a file per DP rank, the folder holding an Ascend
// profiler's trace_view.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"
#include "util.h"

namespace ppstream::analyze {
namespace {
namespace fs = std::filesystem;

std::string replace_all(const std::string& s, const std::string& from, const std::string& to) {
  std::string out;
  size_t at = 0;
  for (size_t hit = s.find(from); hit != std::string::npos; at = hit + from.size(), hit = s.find(from, at))
    out.append(s, at, hit - at).append(to);
  return out.append(s, at, std::string::npos);
}

// What analyze_paths(paths) throws ("(no error)" when it does not).
std::string analyze_error(const std::vector<std::string>& paths) {
  std::string what = "(no error)";
  try {
    analyze_paths(paths);
  } catch (const TraceError& e) {
    what = e.what();
  }
  return what;
}

// F3: PyTorch 1.8-1.10's Kineto wrote "Kernel", "Memcpy", "Memset", "Runtime", "Operator" (the
// TensorBoard plugin's torch_tb_profiler reads them); the same trace so renamed gives the same
// report. Seen failing on main: every kernel dropped, compute_ms 0.
TEST(AnalyzeFaults5, OlderPytorchKinetoCategoriesAreRead) {
  const std::string sample = testing::sample("kineto/hta-nccl_data.json.gz");
  std::string text = testing::file_text(sample);
  for (const auto& [now, old] : {std::pair{"kernel", "Kernel"}, {"gpu_memcpy", "Memcpy"}, {"gpu_memset", "Memset"},
                                 {"cuda_runtime", "Runtime"}, {"cpu_op", "Operator"}})
    text = replace_all(text, std::string("\"cat\": \"") + now + "\"", std::string("\"cat\": \"") + old + "\"");
  ASSERT_NE(text.find("\"cat\": \"Kernel\""), std::string::npos);
  const std::string old_path = testing::write_file(testing::temp_dir("faults5_old") / "old.json", text);
  const AnalysisResult a = analyze_paths({sample}), b = analyze_paths({old_path});
  ASSERT_EQ(b.total.ranks.size(), 1u);
  EXPECT_GT(b.total.ranks[0].compute_ms, 0);
  EXPECT_EQ(replace_all(b.to_json(), old_path, sample), a.to_json());
}

// F3, a category no reader knows on events with args.stream: said in the error (or a note), never
// a silent idle device. Seen failing on main: "no device lanes: 2 events but none is a
// device-stream slice (…)" without the category.
TEST(AnalyzeFaults5, UnknownCategoryWithAStreamIsNamed) {
  const std::string t = R"({"distributedInfo": {"rank": 0}, "traceEvents": [)" +
                        testing::kineto_event("GPU kernel", "gemm", 0, 10, R"("stream":7,"correlation":1)") + "," +
                        testing::kineto_event("kernel", "gemm2", 20, 10, R"("stream":7,"correlation":2)") + "]}";
  const std::string bad = R"({"distributedInfo": {"rank": 0}, "traceEvents": [)" +
                          testing::kineto_event("GPU kernel", "gemm", 0, 10, R"("stream":7,"correlation":1)") + "]}";
  const fs::path dir = testing::temp_dir("faults5_cat");
  const std::string e = analyze_error({testing::write_file(dir / "bad.json", bad)});
  EXPECT_NE(e.find("1 of cat 'GPU kernel' events carry args.stream"), std::string::npos) << e;
  const AnalysisResult r = analyze_paths({testing::write_file(dir / "t.json", t)});
  bool noted = false;
  for (const auto& n : r.notes) noted = noted || n.find("1 of cat 'GPU kernel' events carry args.stream") != std::string::npos;
  EXPECT_TRUE(noted);
}

// The synthetic Megatron timeline (DP 2 x PP 2, tests/data/whatif/syn), its events as JSON.
nlohmann::json small_timeline() {
  return nlohmann::json::parse(testing::file_text(testing::sample("whatif/syn/timeline-SMALL.json.gz")));
}

std::string write_json(const fs::path& dir, const std::string& name, const nlohmann::json& j) {
  return testing::write_file(dir / name, j.dump());
}

// F4: every lane also as TP rank 1 (tid + 100): one rank per (DP, PP, TP) worker, rank =
// (pp · DP + dp) · TP + tp; each TP-0 worker's figures are the TP1 file's worker's. Seen failing
// on main: 4 ranks, every pp_wait_ms doubled (the two TP workers merged into one rank).
TEST(AnalyzeFaults5, MegatronTpRanksAreWorkersOfTheirOwn) {
  const nlohmann::json ev = small_timeline();
  nlohmann::json tp2 = nlohmann::json::array();
  for (const auto& e : ev) {
    tp2.push_back(e);
    if (!e.contains("tid")) continue;
    nlohmann::json f = e;
    f["tid"] = e["tid"].get<int>() + 100;
    if (f.value("ph", "") == "M" && f.value("name", "") == "thread_name") {
      std::string n = f["args"]["name"];
      f["args"]["name"] = replace_all(n, "TP rank 0", "TP rank 1");
    }
    tp2.push_back(f);
  }
  const fs::path dir = testing::temp_dir("faults5_tp");
  const std::string one = write_json(dir, "tp1.json", ev), two = write_json(dir, "tp2.json", tp2);
  const AnalysisResult a = analyze_paths({one}), b = analyze_paths({two});
  ASSERT_EQ(a.total.ranks.size(), 4u);
  ASSERT_EQ(b.total.ranks.size(), 8u);
  for (size_t r = 0; r < 4; ++r) {
    for (int tp = 0; tp < 2; ++tp) {
      const RankMetrics& m = b.total.ranks[2 * r + static_cast<size_t>(tp)];
      EXPECT_EQ(m.rank.v, static_cast<int32_t>(2 * r) + tp);
      EXPECT_EQ(m.pp_rank, a.total.ranks[r].pp_rank);
      EXPECT_NEAR(m.pp_wait_ms, a.total.ranks[r].pp_wait_ms, 1e-9) << "rank " << m.rank.v;
      EXPECT_NEAR(m.compute_ms, a.total.ranks[r].compute_ms, 1e-9) << "rank " << m.rank.v;
    }
  }
}

// F5: DP rank 1's lanes declared, its ops gone: refused naming the worker and the file, as whatif
// refuses it. Seen failing on main: read as a DP1 job of 2 ranks, no word.
TEST(AnalyzeFaults5, MegatronWorkerWithDeclaredLanesAndNoOpIsRefused) {
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& e : small_timeline())
    if (!(e.value("ph", "") == "X" && e.value("pid", -1) == 1)) kept.push_back(e);
  const std::string p = write_json(testing::temp_dir("faults5_lost"), "lost1.json", kept);
  const std::string e = analyze_error({p});
  EXPECT_NE(e.find(p + ": DP rank 1, stage 0, TP rank 0: the file declares its lanes"), std::string::npos) << e;
  EXPECT_NE(e.find("holds no timer op of it"), std::string::npos) << e;
}

// F6: the job split into one file per DP rank (each with its own lanes): DP counted over the
// files, so the ranks and figures are the one file's, with 1 and 2 reader threads. Seen failing on
// main: "rank 1 is already loaded from dp0.json".
TEST(AnalyzeFaults5, MegatronJobSplitPerDpRankIsOneJob) {
  const nlohmann::json ev = small_timeline();
  nlohmann::json dp[2] = {nlohmann::json::array(), nlohmann::json::array()};
  for (const auto& e : ev) dp[e.value("pid", 0)].push_back(e);
  const fs::path dir = testing::temp_dir("faults5_split");
  const std::string one = write_json(dir, "all.json", ev);
  const std::string f0 = write_json(dir, "dp0.json", dp[0]), f1 = write_json(dir, "dp1.json", dp[1]);
  const AnalysisResult a = analyze_paths({one});
  for (const char* threads : {"1", "2"}) {
    ::setenv("PPSTREAM_THREADS", threads, 1);
    const AnalysisResult b = analyze_paths({f0, f1});
    ::unsetenv("PPSTREAM_THREADS");
    ASSERT_EQ(b.total.ranks.size(), a.total.ranks.size()) << threads;
    for (size_t r = 0; r < a.total.ranks.size(); ++r) {
      const RankMetrics &x = a.total.ranks[r], &y = b.total.ranks[r];
      EXPECT_EQ(y.rank, x.rank);
      EXPECT_EQ(y.pp_rank, x.pp_rank);
      EXPECT_NEAR(y.compute_ms, x.compute_ms, 1e-9);
      EXPECT_NEAR(y.pp_wait_ms, x.pp_wait_ms, 1e-9);
      EXPECT_NEAR(y.span_ms, x.span_ms, 1e-9);
    }
    EXPECT_EQ(b.chains.size(), a.chains.size()) << threads;
    for (size_t c = 0; c < std::min(a.chains.size(), b.chains.size()); ++c) EXPECT_EQ(b.chains[c].rank, a.chains[c].rank);
  }
  // The same worker in two files is refused naming both.
  const std::string e = analyze_error({f0, one});
  EXPECT_NE(e.find(": DP rank 0, stage 0, TP rank 0 is already loaded from " + f0), std::string::npos) << e;
}

// F14: the folder holding trace_view.json is read as its profiler directory (kernel_details.csv
// and the other producer files are no error); trace_view.json named alone takes its rank from
// ../profiler_info_<rank>.json. Seen failing on main: "kernel_details.csv: line 1: first column
// 'Step Id'", and the file read as rank 0.
TEST(AnalyzeFaults5, AscendProfilerOutputFolderIsItsProfilerDirectory) {
  // A copy of the sample with the producer's kernel_details.csv beside trace_view.json.
  const fs::path copy = testing::temp_dir("faults5_ascend") / "rank1_ascend_pt";
  fs::copy(testing::sample("ascend/msinsight-level0/rank1_ascend_pt"), copy, fs::copy_options::recursive);
  testing::write_file(copy / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv",
                      "Step Id,Model ID,Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us)\n");
  const std::string dir = copy.string();
  const AnalysisResult a = analyze_paths({dir});
  const AnalysisResult b = analyze_paths({dir + "/ASCEND_PROFILER_OUTPUT"});
  EXPECT_EQ(b.to_json(), a.to_json());
  const AnalysisResult c = analyze_paths({dir + "/ASCEND_PROFILER_OUTPUT/"});
  EXPECT_EQ(c.to_json(), a.to_json());
  const AnalysisResult t = analyze_paths({dir + "/ASCEND_PROFILER_OUTPUT/trace_view.json.gz"});
  ASSERT_EQ(t.total.ranks.size(), 1u);
  EXPECT_EQ(t.total.ranks[0].rank.v, 1);
  for (const auto& n : t.notes) EXPECT_EQ(n.find("names no rank"), std::string::npos) << n;
}

}  // namespace
}  // namespace ppstream::analyze
