// Hardening regression: our own trace's metrics object (otherData.ppstream.metrics, echoed as
// producer_metrics) with a ratio outside [0, 1] or a negative time is a TraceError naming the
// file and the key (fuzz: a mutated simulator trace stated bubble_ratio 5.11); a valid one reads.
#include <gtest/gtest.h>

#include "../analyze/util.h"
#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze {
namespace {

std::string trace(const std::string& metrics) {
  return R"({"traceEvents":[{"ph":"M","name":"thread_name","pid":0,"tid":0,"args":{"name":"compute"}},)"
         R"({"ph":"X","name":"r0 compute F mb0 s0","pid":0,"tid":0,"ts":0,"dur":1000,"args":{"kind":"compute"}}],)"
         R"("otherData":{"ppstream":{"version":1,"producer":"simulator","clock":"global","metrics":)" +
         metrics + "}}}";
}

TEST(HardenProducerMetrics, OutOfRangeFiguresAreTraceErrors) {
  const auto dir = testing::temp_dir("harden_producer_metrics");
  const std::pair<std::string, std::string> bad[] = {
      {R"({"bubble_ratio":5.1111})", "otherData.ppstream.metrics.bubble_ratio is 5.1111; expected a ratio in [0, 1]"},
      {R"({"step_time_ms":-2})", "otherData.ppstream.metrics.step_time_ms is -2; expected a time >= 0 ms"},
      {R"({"x":[{"reduce_overlap_ratio":-0.5}]})",
       "otherData.ppstream.metrics.x[0].reduce_overlap_ratio is -0.5; expected a ratio in [0, 1]"},
  };
  for (const auto& [metrics, message] : bad) {
    const std::string path = testing::write_file(dir / "t.json", trace(metrics));
    try {
      analyze_paths({path});
      ADD_FAILURE() << metrics << ": accepted";
    } catch (const TraceError& e) {
      EXPECT_EQ(std::string(e.what()), path + ": " + message);
    }
  }
  const AnalysisResult ok = analyze_paths(
      {testing::write_file(dir / "ok.json", trace(R"({"policy":"async","step_time_ms":1,"bubble_ratio":0.25})"))});
  ASSERT_EQ(ok.producer_metrics.size(), 1u);
  EXPECT_NE(ok.producer_metrics[0].find("0.25"), std::string::npos);
}

}  // namespace
}  // namespace ppstream::analyze
