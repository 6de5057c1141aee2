// Review regressions of the `ppstream` CLI, run as a user would: the binary built next to this
// test program, each case checking the exit status and the message. Cases: values that used to
// be silently ignored or defaulted (--rank -1, CONFIG beside --programs/--grid, --max-pp 0,
// --seed -1), and files that are directories.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "../cli_run.h"

namespace {

namespace fs = std::filesystem;

std::string example(const char* name) { return std::string(PPSTREAM_SOURCE_DIR) + "/examples/" + name; }

using ppstream::testing_cli::CliRun;
using ppstream::testing_cli::ppstream_binary;

CliRun run(const std::string& args) { return ppstream::testing_cli::run_ppstream(args + " 2>&1"); }

class ReviewCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(ppstream_binary())) GTEST_SKIP() << "no ppstream binary beside the tests";
  }
};

TEST_F(ReviewCli, NegativeRankIsRejectedNotEveryRank) {
  const CliRun r = run("compile " + example("small-pp2-vpp2-fsdp.yaml") + " --rank -1");
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.out.find("world pp=2"), std::string::npos) << "printed every rank: " << r.out.substr(0, 200);
  EXPECT_NE(r.out.find("--rank"), std::string::npos) << r.out;
}

TEST_F(ReviewCli, RankBeyondTheWorldIsNamedBeforeCompiling) {
  const CliRun r = run("compile " + example("small-pp2-vpp2-fsdp.yaml") + " --rank 2");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("--rank 2: no such rank; this configuration has ranks 0..1 (add --expanded for every DP rank)"),
            std::string::npos)
      << r.out;
}

TEST_F(ReviewCli, DumpAfterEachHonoursRank) {
  const CliRun r = run("compile " + example("small-pp2-vpp2-fsdp.yaml") + " --dump-after-each --rank 1");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("# after pass compute-order"), std::string::npos);
  EXPECT_NE(r.out.find("\nr1 compute"), std::string::npos);
  EXPECT_EQ(r.out.find("\nr0 "), std::string::npos) << "rank 0 dumped although --rank 1";
}

TEST_F(ReviewCli, ProgramsBesideConfigIsAnErrorNotIgnored) {
  const std::string dir = ::testing::TempDir();
  const std::string file = dir + "/review_cli_programs.txt";
  ASSERT_EQ(run("compile " + example("small-pp2-vpp2-fsdp.yaml") + " > " + file).rc, 0);
  const CliRun r = run("verify " + example("small-pp2-vpp2-hsdp.yaml") + " --programs " + file + " --set micro_batch_num=8");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("verifies the file as written; drop CONFIG"), std::string::npos) << r.out;
  const CliRun ok = run("verify --programs " + file);
  EXPECT_EQ(ok.rc, 0) << ok.out;
  fs::remove(file);
}

TEST_F(ReviewCli, GridOptionsAreChecked) {
  CliRun r = run("verify --grid --max-pp 0");
  EXPECT_EQ(r.rc, 2);  // was "grid: 0/0 configurations verified", exit 0
  EXPECT_NE(r.out.find("verify --grid: --max-pp=0: expected 1..65536"), std::string::npos) << r.out;
  r = run("verify --grid --max-pp 1 --max-vpp 1 --max-microbatches 2147483647");  // was an endless m *= 2
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("--max-microbatches=2147483647: expected 1..1048576"), std::string::npos) << r.out;
  r = run("verify " + example("small-pp2-vpp2-fsdp.yaml") + " --grid --max-pp 1");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("verify --grid builds its own configurations"), std::string::npos) << r.out;
  r = run("verify " + example("small-pp2-vpp2-fsdp.yaml") + " --max-pp 1");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("only apply with --grid"), std::string::npos) << r.out;
}

TEST_F(ReviewCli, DirectoriesAreNamedAsSuch) {
  const std::string dir = ::testing::TempDir();
  CliRun r = run("verify --programs " + dir);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find(dir + ": cannot read: it is a directory"), std::string::npos) << r.out;  // was basic_filebuf::underflow
  r = run("compile " + dir);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("cannot read " + dir + ": it is a directory; expected a YAML file"), std::string::npos)
      << r.out;  // was "empty config"
}

TEST_F(ReviewCli, NegativeSeedIsRejectedNotWrapped) {
  const CliRun r = run("simulate " + example("seed-300b-moe.yaml") + " --seed -1 --json");
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.out.find("18446744073709551615"), std::string::npos) << r.out.substr(0, 300);
}

TEST_F(ReviewCli, SetCannotInjectOtherKeys) {
  // Without CONFIG, "--set k=v" pairs were pasted into YAML: a line break in a value set num_layers.
  CliRun r = run("compile --set \"$(printf 'pipeline_parallel_size=2\\nnum_layers: 4')\"");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("config: --set pipeline_parallel_size: the value holds a line break"), std::string::npos) << r.out;
  r = run("compile --set num_layers=4 --set 'a: b=1'");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("key 'a: b' is not a config key"), std::string::npos) << r.out;
  r = run("compile --set =4");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("key '' is not a config key"), std::string::npos) << r.out;
  EXPECT_EQ(run("compile --set pipeline_parallel_size=2 --set num_layers=4 --rank 1").rc, 0);
}

}  // namespace

// Zero-bubble schedules split the backward; the MindSpore runtime runs the fused B only, so
// `train` refuses them before starting Python (exit 2, naming the schedule and the way out).
TEST(TrainCli, RefusesASplitBackwardSchedule) {
  if (!fs::exists(ppstream_binary())) GTEST_SKIP() << "no ppstream binary beside the tests";
  const std::string file = ::testing::TempDir() + "/train_zb_h1_" + std::to_string(getpid()) + ".yaml";
  {
    FILE* f = std::fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("pipeline_parallel_size: 2\nmicro_batch_num: 4\nnum_layers: 2\nschedule: zb_h1\n", f);
    std::fclose(f);
  }
  const CliRun r = run("train " + file + " --steps 1");
  fs::remove(file);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("schedule=zb_h1 splits the backward into I (input grad) and W (weight grad)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("use schedule 1f1b or interleaved_1f1b"), std::string::npos) << r.out;
}
