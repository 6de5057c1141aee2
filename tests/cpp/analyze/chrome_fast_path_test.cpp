// The scanner's fast path (chrome_events.cpp dropped_by_leading_keys): events whose leading keys
// are "ph", "cat", "name" are dropped or kept from those alone, with the same result as the full
// parse that events with other key orders take.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"
#include "util.h"

namespace ppstream::analyze {
namespace {

struct Ev {
  std::string ph, cat, name, rest;  // rest: the other keys, as JSON members
};

// Kineto's order (ph, cat, name first: the fast path) or name and rest first (the full parse).
std::string trace(const std::vector<Ev>& evs, bool kineto_order) {
  std::string t = R"({"distributedInfo": {"rank": 0}, "traceEvents": [)";
  for (size_t i = 0; i < evs.size(); ++i) {
    const Ev& e = evs[i];
    const std::string ph = R"("ph": ")" + e.ph + '"', cat = R"("cat": ")" + e.cat + '"',
                      name = R"("name": ")" + e.name + '"';
    t += (i ? ",\n" : "") + (kineto_order ? "{" + ph + ", " + cat + ", " + name + ", " + e.rest + "}"
                                          : "{" + e.rest + ", " + name + ", " + cat + ", " + ph + "}");
  }
  return t + "]}";
}

TEST(AnalyzeFastPath, LeadingKeysDecideAsTheFullParse) {
  const std::vector<Ev> evs = {
      {"X", "cpu_op", "ProfilerStep#1", R"("pid": 1, "tid": 1, "ts": 0, "dur": 100)"},
      {"X", "cpu_op", "ProfilerStep#2", R"("pid": 1, "tid": 1, "ts": 100, "dur": 100)"},
      {"X", "cpu_op", "aten::mm", R"("pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"stream": 7})"},
      {"X", "cpu_op", R"(esc\"aped)", R"("pid": 1, "tid": 1, "ts": 11, "dur": 5, "args": {"stream": 7})"},
      {"f", "ac2g", "ac2g", R"("id": 3, "pid": 1, "tid": 1, "ts": 90, "bp": "e")"},
      {"X", "cuda_runtime", "cudaLaunchKernel", R"("pid": 1, "tid": 1, "ts": 90, "dur": 2, "args": {"correlation": 3})"},
      {"X", "kernel", "gemm", R"("pid": 0, "tid": 7, "ts": 150, "dur": 20, "args": {"stream": 7, "correlation": 3})"},
      {"X", "kernel", "gemm2", R"("pid": 0, "tid": 7, "ts": 120, "dur": 10, "args": {"stream": 7})"},
      {"i", "cpu_op", "instant", R"("pid": 1, "tid": 1, "ts": 5, "s": "t")"},
      // Launches: without a correlation (dropped), with a string one or nested args (full parse),
      // with a corrupt duration (dropped with a note naming it), of kernels below.
      {"X", "cuda_runtime", "cudaMemsetAsync", R"("pid": 1, "tid": 1, "ts": 91, "dur": 1, "args": {"cbid": 2})"},
      {"X", "cuda_runtime", "cudaLaunchKernel", R"("pid": 1, "tid": 1, "ts": 20, "dur": 2, "args": {"correlation": "4"})"},
      {"X", "cuda_driver", "cuLaunchKernel", R"("pid": 1, "tid": 1, "ts": 21, "dur": 2, "args": {"x": [1], "correlation": 5})"},
      {"X", "cuda_runtime", "cudaLaunchKernel", R"("pid": 1, "tid": 1, "ts": 22, "dur": -3, "args": {"correlation": 6})"},
      {"X", "kernel", "k4", R"("pid": 0, "tid": 7, "ts": 30, "dur": 1, "args": {"stream": 7, "correlation": 4})"},
      {"X", "kernel", "k5", R"("pid": 0, "tid": 7, "ts": 31, "dur": 1, "args": {"stream": 7, "correlation": 5})"},
      {"X", "kernel", "k6", R"("pid": 0, "tid": 7, "ts": 32, "dur": 1, "args": {"stream": 7, "correlation": 6})"},
  };
  const auto dir = testing::temp_dir("fast_path");
  std::vector<std::string> reports;
  for (bool kineto_order : {true, false}) {
    const auto sub = dir / (kineto_order ? "a" : "b");
    TraceSet set;
    read_paths({testing::write_file(sub / "t.json", trace(evs, kineto_order))}, set);
    ASSERT_EQ(set.ranks.size(), 1u);
    const auto& tl = set.ranks[0];
    EXPECT_EQ(tl.steps.size(), 2u);   // the ProfilerStep cpu_ops are kept, no other cpu_op is a slice
    ASSERT_EQ(tl.slices.size(), 5u);  // k4, k5, k6, gemm2, gemm
    const auto launch_of = [&](const std::string& name) -> std::optional<int64_t> {
      for (const auto& s : tl.slices) {
        if (set.strings.str(s.name) == name) return s.launch_ns;
      }
      return std::nullopt;
    };
    EXPECT_EQ(launch_of("gemm"), 90'000);  // its launch (a link event) was read
    EXPECT_EQ(launch_of("k4"), 20'000);
    EXPECT_EQ(launch_of("k5"), 21'000);
    EXPECT_EQ(launch_of("k6"), std::nullopt);  // its launch was dropped for its duration
    ASSERT_EQ(set.notes.size(), 1u);
    EXPECT_NE(set.notes[0].find("'cudaLaunchKernel': \"dur\" -3.000 µs is negative"), std::string::npos) << set.notes[0];
    std::string text = analyze(set).to_json();
    for (size_t at; (at = text.find(sub.string())) != std::string::npos;) text.replace(at, sub.string().size(), "DIR");
    reports.push_back(text);
  }
  EXPECT_EQ(reports[0], reports[1]);
}

}  // namespace
}  // namespace ppstream::analyze
