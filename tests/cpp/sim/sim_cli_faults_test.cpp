// The faults of `ppstream simulate` (and whatif's outputs) a fresh user found (breaker4, 2026-12-02),
// through the CLI as a user meets them: two outputs that are one file, an empty output path, a seed
// past 2^63 - 1, the replica vector falling back to the expanded engine unsaid, the two engines
// wording one fault differently, cluster-only options without --cluster.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../cli_run.h"

namespace ppstream::sim {
namespace {

namespace fs = std::filesystem;
using testing_cli::run_ppstream;

const std::string kSmall = std::string(PPSTREAM_SOURCE_DIR) + "/examples/small-pp2-vpp2-hsdp.yaml";

// A fresh directory of the running test (ctest runs each test as its own process, in parallel).
std::string temp_dir() {
  const fs::path d = fs::path(::testing::TempDir()) /
                     ("sim_cli_faults_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(SimCliFaults, TwoOutputsThatAreOneFileAreRefusedBeforeTheRun) {
  const std::string d = temp_dir();
  struct Case {
    std::string args, first, second;  // the command line, the two options it must name
  };
  const Case cases[] = {
      // The SVG over the trace's configuration (whatif of the trace then read invalid YAML).
      {"simulate " + kSmall + " --cluster --trace-every-rank --trace " + d + "/X.json --svg " + d + "/X.json.config.yaml",
       "--trace", "--svg"},
      {"simulate " + kSmall + " --svg " + d + "/s.out --trace " + d + "/s.out", "--trace", "--svg"},
      {"simulate " + kSmall + " --svg " + d + "/./s.out --trace " + d + "/s.out", "--trace", "--svg"},
      {"simulate " + kSmall + " --reduce-grad both --svg " + d + "/T.inline.json --trace " + d + "/T.json", "--trace",
       "--svg"},
      {"whatif " + kSmall + " --svg " + d + "/w.out --trace " + d + "/w.out", "--svg", "--trace"},
  };
  for (const Case& c : cases) {
    const auto r = run_ppstream(c.args + " 2>&1");
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, c.first) && has(r.out, c.second) && has(r.out, "the same file")) << c.args << "\n" << r.out;
  }
  EXPECT_TRUE(fs::is_empty(d)) << "refused before the run: nothing written in " << d;
}

TEST(SimCliFaults, AnEmptyOutputPathIsRefused) {
  for (const std::string& args : {"simulate " + kSmall + " --trace ''", "simulate " + kSmall + " --svg ''",
                                  "whatif " + kSmall + " --trace ''", "whatif " + kSmall + " --svg ''"}) {
    const auto r = run_ppstream(args + " 2>&1");
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "expected a file to write")) << args << "\n" << r.out;
  }
}

// One range, 0 to 2^63 - 1, for --seed and straggler.seed; CLI11 clamped a larger --seed to 2^63 - 1.
TEST(SimCliFaults, ASeedOutsideItsRangeIsRefusedNamingTheRange) {
  for (const char* seed : {"9223372036854775808", "18446744073709551615", "99999999999999999999999", "-1"}) {
    const auto r = run_ppstream("simulate " + kSmall + " --json --quiet --seed " + seed + " 2>&1");
    EXPECT_EQ(r.rc, 2) << seed << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "--seed") && has(r.out, "9223372036854775807")) << seed << "\n" << r.out;
  }
  const auto yaml = run_ppstream("simulate " + kSmall + " --json --set straggler.seed=9223372036854775808 2>&1");
  EXPECT_EQ(yaml.rc, 2) << yaml.out;
  EXPECT_TRUE(has(yaml.out, "straggler.seed") && has(yaml.out, "9223372036854775807")) << yaml.out;
  const auto top = run_ppstream("simulate " + kSmall + " --json --quiet --seed 9223372036854775807 2>&1");
  EXPECT_EQ(top.rc, 0) << top.out;
  EXPECT_TRUE(has(top.out, "\"seed\": 9223372036854775807")) << top.out;
}

// --cluster-engine replica given: when the expanded engine runs instead, stderr says so and why.
TEST(SimCliFaults, ReplicaAskedForByNameSaysWhenTheExpandedEngineRan) {
  const std::string d = temp_dir();
  const std::string base = "simulate " + kSmall + " --cluster --quiet --json";
  const auto fair = run_ppstream(base + " --cluster-engine replica --set cost.link_sharing=fair 2>&1 >/dev/null");
  EXPECT_EQ(fair.rc, 0) << fair.out;
  EXPECT_TRUE(has(fair.out, "expanded engine ran") && has(fair.out, "cost.link_sharing")) << fair.out;
  const auto traced = run_ppstream(base + " --cluster-engine replica --trace " + d + "/t.json 2>&1 >/dev/null");
  EXPECT_EQ(traced.rc, 0) << traced.out;
  EXPECT_TRUE(has(traced.out, "expanded engine ran") && has(traced.out, "--trace")) << traced.out;
  // Not asked for by name, or the vector ran: nothing on stderr.
  EXPECT_EQ(run_ppstream(base + " --set cost.link_sharing=fair 2>&1 >/dev/null").out, "");
  EXPECT_EQ(run_ppstream(base + " --cluster-engine replica 2>&1 >/dev/null").out, "");
}

// A lognormal draw past a double on several ranks: both engines name the same rank (the vector
// named the first replica it met, r2; the expanded engine the first it ran into, r11).
TEST(SimCliFaults, BothClusterEnginesWordAnInfiniteCostAlike) {
  const std::string d = temp_dir();
  std::ifstream in(std::string(PPSTREAM_SOURCE_DIR) + "/examples/seed-pp4-vpp2-hsdp-64.yaml");
  std::ostringstream cfg;
  for (std::string line; std::getline(in, line) && line.rfind("straggler:", 0) != 0;) cfg << line << "\n";
  cfg << "straggler:\n  distribution: {kind: lognormal, median_ms: 1.0, sigma: 300}\n";
  const std::string path = d + "/lognormal.yaml";
  std::ofstream(path) << cfg.str();
  const auto replica = run_ppstream("simulate " + path + " --cluster --quiet 2>&1");
  const auto expanded = run_ppstream("simulate " + path + " --cluster --quiet --cluster-engine expanded 2>&1");
  EXPECT_EQ(replica.rc, 2) << replica.out;
  EXPECT_TRUE(has(replica.out, "arrival_delay_ms of r")) << replica.out;
  EXPECT_EQ(replica.out, expanded.out);
}

// An infinite step made by a straggler tail's delay was blamed on cost.backward_ms_per_layer.
TEST(SimCliFaults, AnInfiniteStepFromATailNamesTheTail) {
  const std::string d = temp_dir();
  std::ifstream in(kSmall);
  std::ostringstream cfg;
  cfg << in.rdbuf() << "straggler:\n  tails:\n    - {pp_rank: 0, dp_index: 0, delay_ms: 1.0}\n"
      << "    - {pp_rank: 0, dp_index: 0, delay_ms: 1.0e308}\n    - {pp_rank: 1, dp_index: 1, delay_ms: 1.0e308}\n";
  const std::string path = d + "/tail.yaml";
  std::ofstream(path) << cfg.str();
  for (const std::string cluster : {"", " --cluster", " --cluster --cluster-engine expanded"}) {
    const auto r = run_ppstream("simulate " + path + cluster + " --quiet 2>&1");
    EXPECT_EQ(r.rc, 2) << cluster << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "straggler.tails[1].delay_ms") && !has(r.out, "backward_ms_per_layer")) << cluster << "\n" << r.out;
  }
  // The replica vector words it itself (the words name no rank or trial): no second run of the
  // whole world by the expanded engine, which the note would announce; the same text.
  const auto expanded = run_ppstream("simulate " + path + " --cluster --cluster-engine expanded --quiet --trials 3 2>&1");
  const auto vector = run_ppstream("simulate " + path + " --cluster --cluster-engine replica --quiet --trials 3 2>&1");
  EXPECT_EQ(vector.rc, 2) << vector.out;
  EXPECT_FALSE(has(vector.out, "expanded engine ran")) << vector.out;
  EXPECT_EQ(vector.out, expanded.out);
}

TEST(SimCliFaults, ClusterOnlyOptionsWithoutClusterAreRefused) {
  for (const std::string opt : {"--cluster-engine expanded", "--cluster-engine replica", "--trace-every-rank"}) {
    const auto r = run_ppstream("simulate " + kSmall + " --quiet " + opt + " 2>&1");
    EXPECT_EQ(r.rc, 2) << opt << "\n" << r.out;
    EXPECT_TRUE(has(r.out, opt.substr(0, opt.find(' '))) && has(r.out, "only with --cluster")) << opt << "\n" << r.out;
  }
}

}  // namespace
}  // namespace ppstream::sim
