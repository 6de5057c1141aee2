// `ppstream tune` as a user runs it: --json, --apply OUT.yaml and `simulate OUT.yaml --trials N`
// reproducing the reported p99 exactly; a memory budget nothing fits, or a space with no valid
// point, makes --apply an error after the report.
#include <gtest/gtest.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "../cli_run.h"

namespace {

namespace fs = std::filesystem;

using ppstream::testing_cli::ppstream_binary;

struct CliRun {
  int rc = -1;
  std::string out, err;
};

// A temporary path of the running test: ctest runs each test as its own process, in parallel.
std::string temp_path(const std::string& what) {
  return testing::TempDir() + "tune_cli_" + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" + what;
}

// stdout and stderr apart: the progress bar goes to stderr only.
CliRun run(const std::string& args) {
  const std::string err_path = temp_path("err.txt");
  const auto r = ppstream::testing_cli::run_ppstream(args + " 2>" + err_path);
  std::ifstream e(err_path);
  CliRun out{r.rc, r.out, std::string(std::istreambuf_iterator<char>(e), std::istreambuf_iterator<char>())};
  fs::remove(err_path);
  return out;
}

class TuneCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(ppstream_binary())) GTEST_SKIP() << "no ppstream binary beside the tests";
    cfg_ = temp_path("config.yaml");
    out_ = temp_path("best.yaml");
    std::ofstream(cfg_) << R"(
pipeline_parallel_size: 2
micro_batch_num: 4
num_layers: 4
data_parallel: {mode: hsdp, shard_size: 1, replicate_size: 4}
cost: {forward_ms_per_layer: 1, backward_ms_per_layer: 2, grad_bytes_per_layer: 1.0e8, replicate_bandwidth_gb_per_s: 50}
straggler: {seed: 5, distribution: {kind: lognormal, median_ms: 2, sigma: 1.0}}
)";
  }
  void TearDown() override {
    fs::remove(cfg_);
    fs::remove(out_);
  }
  std::string cfg_, out_;
};

TEST_F(TuneCli, ApplyOutputReproducesTheP99UnderSimulate) {
  const CliRun t = run("tune " + cfg_ + " --trials 9 --space schedule=gpipe,1f1b --space data_parallel.reduce_grad=inline,async "
                    "--json --quiet --apply " + out_);
  ASSERT_EQ(t.rc, 0) << t.err;
  EXPECT_EQ(t.err, "");  // no progress bar off a terminal
  const auto j = nlohmann::json::parse(t.out);
  ASSERT_FALSE(j["plans"].empty());
  const CliRun s = run("simulate " + out_ + " --trials 9 --json");
  ASSERT_EQ(s.rc, 0) << s.err;
  const auto sj = nlohmann::json::parse(s.out);
  const auto& pol = sj["policies"].begin().value();
  EXPECT_EQ(pol["trials"]["p99_ms"].get<double>(), j["plans"][0]["p99_ms"].get<double>());
  EXPECT_EQ(pol["memory"]["peak_memory_bytes"].get<double>(), j["plans"][0]["peak_memory_bytes"].get<double>());
}

TEST_F(TuneCli, ProgressFlagDrawsTheBarOnStderr) {
  const CliRun t = run("tune " + cfg_ + " --trials 3 --space schedule=gpipe,1f1b --progress");
  ASSERT_EQ(t.rc, 0) << t.err;
  EXPECT_NE(t.err.find("tune ["), std::string::npos) << t.err;
  EXPECT_NE(t.out.find("baselines"), std::string::npos) << t.out;
}

TEST_F(TuneCli, NothingWithinTheMemoryBudgetIsAnErrorForApply) {
  const CliRun t = run("tune " + cfg_ + " --trials 3 --space schedule=gpipe,1f1b --memory-budget 1 --apply " + out_);
  EXPECT_NE(t.rc, 0);
  EXPECT_NE(t.err.find("no plan within the memory budget"), std::string::npos) << t.err;
  EXPECT_NE(t.out.find("no plan in the space is within the memory budget"), std::string::npos) << t.out;  // the report first
  EXPECT_FALSE(fs::exists(out_));
}

// Every point set aside (interleaved schedules need vpp > 1): --apply says so (not "memory
// budget"), after printing the --json report; a budget with a unit parses, one without a known
// unit is an input error (exit 2, not CLI11's conversion failure).
TEST_F(TuneCli, ApplyWithNoPlanScoredSaysWhyAfterTheReport) {
  const CliRun t = run("tune " + cfg_ + " --trials 2 --space schedule=interleaved_1f1b --memory-budget 80GiB --json --quiet --apply " + out_);
  EXPECT_EQ(t.rc, 2);
  EXPECT_NE(t.err.find("no plan in the space was scored (1 point, 0 verified"), std::string::npos) << t.err;
  const auto j = nlohmann::json::parse(t.out);
  EXPECT_EQ(j["memory_budget_bytes"].get<double>(), 80.0 * 1073741824);
  EXPECT_TRUE(j["plans"].empty());
  EXPECT_EQ(j["log"][0]["outcome"].get<std::string>().rfind("invalid: ", 0), 0u);
  EXPECT_FALSE(fs::exists(out_));
  const CliRun g = run("tune " + cfg_ + " --trials 2 --memory-budget 80G");
  EXPECT_EQ(g.rc, 2);
  EXPECT_NE(g.err.find("unknown unit 'G'"), std::string::npos) << g.err;
  EXPECT_EQ(g.out, "");
}

// tune --from-trace on a `simulate --trace` file: the search on its measured costs, the JSON says
// so; a trace whose config is gone is an error naming the file; CONFIG beside --from-trace too.
TEST_F(TuneCli, FromTraceRunsOnTheSimulatorsTraceAndNamesAMissingConfig) {
  const std::string trace = testing::TempDir() + "tune_cli_trace.json";
  ASSERT_EQ(run("simulate " + cfg_ + " --cluster --trace-every-rank --trace " + trace).rc, 0);
  const CliRun t = run("tune --from-trace " + trace + " --trials 3 --space schedule=gpipe,1f1b --json --quiet");
  ASSERT_EQ(t.rc, 0) << t.err;
  const auto j = nlohmann::json::parse(t.out);
  EXPECT_EQ(j["cost_source"], "trace");
  EXPECT_EQ(j["trace"]["steps"], 1);
  EXPECT_EQ(j["trace"]["config"], trace + ".config.yaml");
  EXPECT_TRUE(j["as_written"]["unmeasured_instructions"].empty());
  const CliRun both = run("tune " + cfg_ + " --from-trace " + trace);
  EXPECT_NE(both.rc, 0);
  EXPECT_NE(both.err.find("give no CONFIG"), std::string::npos) << both.err;
  fs::remove(trace + ".config.yaml");
  const CliRun missing = run("tune --from-trace " + trace + " --trials 3");
  EXPECT_NE(missing.rc, 0);
  EXPECT_NE(missing.err.find(trace + ": no " + trace + ".config.yaml beside it"), std::string::npos) << missing.err;
  fs::remove(trace);
}

std::string text_of(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// breaker round 2, fault 5: `--apply` naming the config being tuned replaced it (comments and
// all) with exit 0, and an --apply path that cannot be written failed only after the whole search.
// Both are refused before the search: exit 2, nothing printed on stdout, the config unchanged.
TEST_F(TuneCli, ApplyRefusesTheFilesTheSearchReadsAndAPathItCannotWriteBeforeSearching) {
  const std::string before = text_of(cfg_);
  const CliRun same = run("tune " + cfg_ + " --trials 2 --space schedule=1f1b --quiet --apply " + cfg_);
  EXPECT_EQ(same.rc, 2);
  EXPECT_NE(same.err.find("which the search reads"), std::string::npos) << same.err;
  EXPECT_EQ(same.out, "");
  EXPECT_EQ(text_of(cfg_), before);
  const CliRun nodir = run("tune " + cfg_ + " --trials 2 --quiet --apply " + temp_path("no-such-dir") + "/best.yaml");
  EXPECT_EQ(nodir.rc, 2);
  EXPECT_NE(nodir.err.find("no directory"), std::string::npos) << nodir.err;
  EXPECT_EQ(nodir.out, "");
  const CliRun isdir = run("tune " + cfg_ + " --trials 2 --quiet --apply " + testing::TempDir());
  EXPECT_EQ(isdir.rc, 2);
  EXPECT_NE(isdir.err.find("is a directory"), std::string::npos) << isdir.err;
  EXPECT_EQ(isdir.out, "");
  // From a trace: neither the trace nor the config beside it.
  const std::string trace = temp_path("t.json");
  ASSERT_EQ(run("simulate " + cfg_ + " --cluster --trace-every-rank --trace " + trace).rc, 0);
  const std::string traced = text_of(trace + ".config.yaml");
  for (const std::string& target : {trace + ".config.yaml", trace}) {
    const CliRun t = run("tune --from-trace " + trace + " --trials 2 --space schedule=1f1b --quiet --apply " + target);
    EXPECT_EQ(t.rc, 2) << target;
    EXPECT_NE(t.err.find("which the search reads"), std::string::npos) << t.err;
    EXPECT_EQ(t.out, "");
  }
  EXPECT_EQ(text_of(trace + ".config.yaml"), traced);
  fs::remove(trace);
  fs::remove(trace + ".config.yaml");
}

// A config with a train: section is meant for `ppstream train`, which runs only the fused
// backward: the default space leaves out the schedules that split it (the note says so), and
// --space naming one is refused before the search.
TEST_F(TuneCli, TrainConfigLeavesOutTheSchedulesTrainRefuses) {
  { std::ofstream(cfg_, std::ios::app) << "train: {steps: 2}\n"; }
  const CliRun t = run("tune " + cfg_ + " --trials 3 --json --quiet --apply " + out_);
  ASSERT_EQ(t.rc, 0) << t.err;
  const auto j = nlohmann::json::parse(t.out);
  bool has_schedule = false;
  for (const auto& d : j["space"])
    if (d["key"] == "schedule") {
      has_schedule = true;
      EXPECT_EQ(d["values"], nlohmann::json::array({"gpipe", "1f1b"})) << d.dump();
    }
  EXPECT_TRUE(has_schedule) << j["space"].dump();
  EXPECT_NE(j["notes"].dump().find("leaves out the schedules `ppstream train` refuses"), std::string::npos) << j["notes"].dump();
  EXPECT_NE(j["notes"].dump().find("zb_h1 splits the backward"), std::string::npos) << j["notes"].dump();
  std::ifstream f(out_);
  const std::string written(std::istreambuf_iterator<char>(f), {});
  EXPECT_EQ(written.find("zb_h1"), std::string::npos) << written;
  const CliRun zb = run("tune " + cfg_ + " --trials 3 --quiet --space schedule=1f1b,zb_h1");
  EXPECT_EQ(zb.rc, 2);
  EXPECT_NE(zb.err.find("tune --space schedule=1f1b,zb_h1: the config has a train: section"), std::string::npos) << zb.err;
  EXPECT_NE(zb.err.find("zb_h1 splits the backward"), std::string::npos) << zb.err;
  EXPECT_EQ(zb.out, "");
}

// --apply into another directory: train.model / train.data are imported from the config's own
// directory, so the written plan names it as train.module_dir (absolute); into the same
// directory it writes no module_dir.
TEST_F(TuneCli, ApplyElsewhereNamesTheModuleDirectory) {
  const fs::path src = fs::path(temp_path("src"));
  const fs::path dst = fs::path(temp_path("dst"));
  fs::create_directories(src);
  fs::create_directories(dst);
  const std::string cfg = (src / "own.yaml").string();
  fs::copy_file(cfg_, cfg, fs::copy_options::overwrite_existing);
  { std::ofstream(cfg, std::ios::app) << "train:\n  model: regressor:build\n  data: regressor:batches\n"; }
  const auto module_dir_of = [](const fs::path& p) {
    std::ifstream f(p);
    const std::string text(std::istreambuf_iterator<char>(f), {});
    const size_t at = text.find("module_dir: ");
    return at == std::string::npos ? std::string() : text.substr(at + 12, text.find('\n', at) - at - 12);
  };
  ASSERT_EQ(run("tune " + cfg + " --trials 2 --quiet --space schedule=1f1b --apply " + (dst / "best.yaml").string()).rc, 0);
  EXPECT_EQ(module_dir_of(dst / "best.yaml"), fs::weakly_canonical(src).string());
  ASSERT_EQ(run("tune " + cfg + " --trials 2 --quiet --space schedule=1f1b --apply " + (src / "best.yaml").string()).rc, 0);
  EXPECT_EQ(module_dir_of(src / "best.yaml"), "");
  // The written plan tuned again into a third directory keeps naming the first one.
  const fs::path third = fs::path(temp_path("third"));
  fs::create_directories(third);
  ASSERT_EQ(run("tune " + (dst / "best.yaml").string() + " --trials 2 --quiet --space schedule=1f1b --apply " +
                (third / "best.yaml").string()).rc, 0);
  EXPECT_EQ(module_dir_of(third / "best.yaml"), fs::weakly_canonical(src).string());
  fs::remove_all(src);
  fs::remove_all(dst);
  fs::remove_all(third);
}

// A value that is not of its option's type says what is expected, for every command (one
// place: run_app); an unsigned option refuses a negative value instead of wrapping it.
TEST_F(TuneCli, OptionValuesOfTheWrongTypeSayWhatIsExpected) {
  const std::pair<std::string, std::string> cases[] = {
      {"tune " + cfg_ + " --trials abc", "ppstream: tune --trials abc: expected an integer"},
      {"tune " + cfg_ + " --trials 1.5", "ppstream: tune --trials 1.5: expected an integer"},
      {"tune " + cfg_ + " --budget-s abc", "ppstream: tune --budget-s abc: expected a number"},
      {"simulate " + cfg_ + " --trials x", "ppstream: simulate --trials x: expected an integer"},
      {"tune --from-trace t.json --trace-seed -1", "--trace-seed: expected an integer >= 0"},
  };
  for (const auto& [args, expected] : cases) {
    const CliRun r = run(args);
    EXPECT_EQ(r.rc, 2) << args;
    EXPECT_NE(r.err.find(expected), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
}

// --from-trace takes a ppstream trace (its config is compiled again for every plan): a Megatron
// timeline is refused as tune's, naming whatif for it; a lift fault is tune's too.
TEST_F(TuneCli, FromTraceOfATimelineNamesWhatif) {
  const std::string timeline = temp_path("timeline.json");
  std::ofstream(timeline) << R"({"traceEvents": [{"name": "forward-compute", "ph": "X", "ts": 0, "dur": 5, "pid": 0, "tid": 0}]})";
  const CliRun t = run("tune --from-trace " + timeline + " --quiet");
  EXPECT_EQ(t.rc, 2);
  EXPECT_NE(t.err.find("ppstream: tune --from-trace " + timeline + ": not a ppstream trace"), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("`ppstream whatif " + timeline + "`"), std::string::npos) << t.err;
  EXPECT_EQ(t.err.find("whatif: "), std::string::npos) << t.err;
  EXPECT_EQ(t.out, "");
  const CliRun missing = run("tune --from-trace " + temp_path("none.json") + " --quiet");
  EXPECT_EQ(missing.rc, 2);
  EXPECT_NE(missing.err.find("ppstream: tune --from-trace: "), std::string::npos) << missing.err;
  EXPECT_EQ(missing.err.find("whatif: "), std::string::npos) << missing.err;
  fs::remove(timeline);
}

}  // namespace
