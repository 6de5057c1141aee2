// Outputs: the Chrome/Perfetto trace's JSON shape (and that the analyzer reads it back), the
// SVG's structure, and the CLI-facing JSON report fields.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ppstream/analyze/readers.h"
#include "ppstream/config/config.h"
#include "ppstream/sim/simulate.h"

namespace ppstream::sim {
namespace {

PipelineConfig small_hsdp() {
  return load_config_text(R"(
pipeline_parallel_size: 4
pipeline_parallel_interleave_num: 2
micro_batch_num: 8
num_layers: 8
pipeline_parallel_overlap_p2p: true
pipeline_parallel_overlap_b_f: true
pipeline_parallel_p2p_transport: multi_stream
data_parallel: {mode: hsdp, shard_size: 2, replicate_size: 4, reduce_grad: inline}
cost: {forward_ms_per_layer: 1, backward_ms_per_layer: 2, p2p_latency_ms: 0.1, grad_bytes_per_layer: 1.0e8,
       param_bytes_per_layer: 5.0e7, shard_bandwidth_gb_per_s: 50, replicate_bandwidth_gb_per_s: 25}
straggler: {tails: [{pp_rank: 1, dp_index: 3, delay_ms: 10, collectives: [reduce_grad]}]}
)",
                          "test");
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(SimOutput, TraceHasPerfettoShape) {
  const std::string base = testing::TempDir() + "sim_trace.json";
  SimOptions o;
  o.policies = {ReducePolicy::INLINE, ReducePolicy::ASYNC};
  o.trace_path = base;
  simulate(small_hsdp(), o);
  for (const char* policy : {"inline", "async"}) {
    const std::string path = testing::TempDir() + "sim_trace." + policy + ".json";
    const auto doc = nlohmann::json::parse(slurp(path));
    ASSERT_TRUE(doc.contains("traceEvents"));
    ASSERT_TRUE(doc["traceEvents"].is_array());
    std::set<std::string> threads, cats;
    int waits = 0, slices = 0;
    for (const auto& e : doc["traceEvents"]) {
      ASSERT_TRUE(e["ph"].is_string());
      ASSERT_TRUE(e["pid"].is_number_integer());
      if (e["ph"] == "M" && e["name"] == "thread_name") threads.insert(e["args"]["name"].get<std::string>());
      if (e["ph"] != "X") continue;
      ++slices;
      ASSERT_TRUE(e["tid"].is_number_integer()) << e.dump();
      ASSERT_TRUE(e["name"].is_string()) << e.dump();
      ASSERT_TRUE(e["ts"].is_number()) << e.dump();
      ASSERT_TRUE(e["dur"].is_number()) << e.dump();
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      cats.insert(e["args"]["kind"].get<std::string>());
      if (e["name"] == "EVENT_WAIT") ++waits;
    }
    EXPECT_GT(slices, 40) << policy;
    EXPECT_GT(waits, 0) << policy;
    EXPECT_TRUE(threads.count("compute")) << policy;
    EXPECT_TRUE(threads.count("p2p.0")) << policy;  // multi_stream: one stream per edge
    EXPECT_TRUE(cats.count("compute") && cats.count("p2p") && cats.count("collective") && cats.count("stream_wait"))
        << policy;
    // The analyzer reads it back: every rank, with their streams.
    analyze::TraceSet set;
    analyze::read_paths({path}, set);
    ASSERT_EQ(set.ranks.size(), 4u);
    EXPECT_TRUE(set.global_clock);
  }
}

TEST(SimOutput, SvgDrawsBothPoliciesWithLabels) {
  const std::string path = testing::TempDir() + "sim.svg";
  SimOptions o;
  o.policies = {ReducePolicy::INLINE, ReducePolicy::ASYNC};
  o.svg_path = path;
  simulate(small_hsdp(), o);
  const std::string svg = slurp(path);
  ASSERT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("reduce_grad: inline"), std::string::npos);
  EXPECT_NE(svg.find("reduce_grad: async"), std::string::npos);
  EXPECT_NE(svg.find("<title>B mb3 s7"), std::string::npos);
  EXPECT_NE(svg.find("EVENT_WAIT"), std::string::npos);
  // Well-formed enough for a browser: every opened rect/text is closed.
  auto count = [&](const std::string& s) {
    size_t n = 0;
    for (size_t at = svg.find(s); at != std::string::npos; at = svg.find(s, at + 1)) ++n;
    return n;
  };
  EXPECT_GT(count("</rect>"), 50u);  // one per drawn instruction, each with a <title>
  EXPECT_EQ(count("<text"), count("</text>"));
}

TEST(SimOutput, ReportJsonHasTheDesignNames) {
  SimOptions o;
  o.policies = {ReducePolicy::INLINE, ReducePolicy::ASYNC};
  const auto j = nlohmann::json::parse(report_json(simulate(small_hsdp(), o)));
  EXPECT_EQ(j["format"], "ppstream.sim/1");
  for (const char* policy : {"inline", "async"}) {
    const auto& m = j["policies"][policy];
    for (const char* key : {"step_time_ms", "bubble_ratio", "reduce_exposed_ms", "reduce_overlap_ratio", "critical_path",
                            "pp_wait_ms", "compute_waits", "ranks"})
      EXPECT_TRUE(m.contains(key)) << policy << " " << key;
    EXPECT_TRUE(m["ranks"][0].contains("compute_wait_ms"));
    EXPECT_FALSE(m["critical_path"].empty());
  }
  EXPECT_TRUE(j["comparison"].contains("step_time_ms"));
  EXPECT_THROW(parse_policies("sometimes"), std::invalid_argument);
}

TEST(SimOutput, NoDataParallelismRejectsAPolicyComparison) {
  const PipelineConfig cfg = load_config_text("pipeline_parallel_size: 2\nmicro_batch_num: 2\nnum_layers: 2\n", "test");
  SimOptions o;
  o.policies = {ReducePolicy::INLINE, ReducePolicy::ASYNC};
  EXPECT_THROW(simulate(cfg, o), ConfigError);
}

}  // namespace
}  // namespace ppstream::sim
