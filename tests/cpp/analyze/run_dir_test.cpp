// A `ppstream train` run directory as analyzer input, on a real 4-rank run (tests/data/train-run,
// see its NOTICE.md): the directory reads exactly what its ranks' host traces read one by one,
// its profile/ exactly what the profiler directories read one by one.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"
#include "util.h"

namespace ppstream::analyze {
namespace {
namespace fs = std::filesystem;
using testing::sample;

const int kRanks = 4;  // run.json "ranks": [0, 3]

// Every rank's host trace, named one by one (what worked before).
std::vector<std::string> host_traces(const fs::path& run) {
  std::vector<std::string> paths;
  for (int r = 0; r < kRanks; ++r) paths.push_back((run / ("rank" + std::to_string(r)) / "trace.json").string());
  return paths;
}

// The profiler directories of the run's profile/, named one by one.
std::vector<std::string> profiler_dirs(const fs::path& run) {
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(run / "profile")) paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

// A writable copy of the fixture.
fs::path copy_run(const std::string& name) {
  const fs::path dst = testing::temp_dir(name) / "run";
  fs::copy(sample("train-run"), dst, fs::copy_options::recursive);
  return dst;
}

void set_profile_false(const fs::path& run) {
  std::string json;
  {
    std::ifstream in(run / "run.json");
    json.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto at = json.find("\"profile\": true");
  ASSERT_NE(at, std::string::npos);
  json.replace(at, 15, "\"profile\": false");
  testing::write_file(run / "run.json", json);
}

std::string message_of(const std::vector<std::string>& paths) {
  try {
    TraceSet set;
    read_paths(paths, set);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

bool has_note(const TraceSet& set, const std::string& needle) {
  return std::any_of(set.notes.begin(), set.notes.end(), [&](const std::string& n) { return n.find(needle) != n.npos; });
}

bool has_stream(const RankTimeline& tl, std::string_view prefix) {
  return std::any_of(tl.streams.begin(), tl.streams.end(), [&](const StreamInfo& s) { return s.name.rfind(prefix, 0) == 0; });
}

// Same ranks, each with the same streams, slices and steps.
void expect_same_timelines(const TraceSet& a, const TraceSet& b) {
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t i = 0; i < a.ranks.size(); ++i) {
    EXPECT_EQ(a.ranks[i].rank, b.ranks[i].rank);
    EXPECT_EQ(a.ranks[i].slices.size(), b.ranks[i].slices.size()) << "rank " << i;
    EXPECT_EQ(a.ranks[i].streams.size(), b.ranks[i].streams.size()) << "rank " << i;
    EXPECT_EQ(a.ranks[i].steps.size(), b.ranks[i].steps.size()) << "rank " << i;
  }
}

TEST(AnalyzeRunDir, ReadsEveryRanksHostTraceAndNamesTheProfilerOutput) {
  TraceSet dir, files;
  read_paths({sample("train-run")}, dir);
  read_paths(host_traces(sample("train-run")), files);
  ASSERT_EQ(dir.ranks.size(), static_cast<size_t>(kRanks));
  EXPECT_EQ(dir.sources.size(), static_cast<size_t>(kRanks));  // the four trace.json, nothing else
  expect_same_timelines(dir, files);
  for (const auto& tl : dir.ranks) EXPECT_TRUE(has_stream(tl, "compute")) << tl.rank.v;
  EXPECT_TRUE(has_note(dir, "train-run/profile: the run's profiler output, not read with the host traces"));
  EXPECT_TRUE(has_note(dir, "analyze it as `ppstream analyze "));
}

TEST(AnalyzeRunDir, TheRunsProfileDirectoryReadsEveryRanksProfilerOutput) {
  TraceSet prof, dirs;
  read_paths({sample("train-run/profile")}, prof);
  read_paths(profiler_dirs(sample("train-run")), dirs);
  ASSERT_EQ(prof.ranks.size(), static_cast<size_t>(kRanks));
  expect_same_timelines(prof, dirs);
  for (const auto& tl : prof.ranks) EXPECT_TRUE(has_stream(tl, "CPU OP")) << tl.rank.v;  // MindSpore's CPU lanes
}

TEST(AnalyzeRunDir, AnalyzeAndDiffTakeTheRunDirectory) {
  auto r = analyze_paths({sample("train-run")});
  EXPECT_NE(r.to_text().find("SEND_B"), std::string::npos) << r.to_text();  // the wait chain names our instructions
  ASSERT_EQ(r.notes.size(), 1u);  // where the profiler output is; otherwise the figures of the files themselves
  r.notes.clear();
  EXPECT_EQ(r.to_json(), analyze_paths(host_traces(sample("train-run"))).to_json());
  EXPECT_FALSE(diff_paths({sample("train-run")}, {sample("train-run")}).to_text().empty());
  EXPECT_FALSE(diff_paths({sample("train-run/profile")}, {sample("train-run/profile")}).to_text().empty());
}

TEST(AnalyzeRunDir, ProfileOfARunWithoutProfileIsNotedAsStale) {
  const fs::path run = copy_run("noprof");
  set_profile_false(run);
  TraceSet set;
  read_paths({run.string()}, set);
  EXPECT_EQ(set.sources.size(), static_cast<size_t>(kRanks));
  EXPECT_TRUE(has_note(set, "run/profile: not read: run.json says profile: false"));
}

TEST(AnalyzeRunDir, MissingRankTraceIsAnErrorNamingIt) {
  const fs::path run = copy_run("missing");
  fs::remove(run / "rank2" / "trace.json");
  const std::string msg = message_of({run.string()});
  EXPECT_NE(msg.find("rank2/trace.json: missing: rank 2 of this run (run.json ranks [0, 3])"), std::string::npos) << msg;
  EXPECT_NE(msg.find("progress/rank2.txt"), std::string::npos) << msg;
}

TEST(AnalyzeRunDir, RunJsonWithoutRanksIsAnErrorNamingTheKey) {
  const fs::path run = copy_run("noranks");
  testing::write_file(run / "run.json", R"({"profile": true})");
  const std::string msg = message_of({run.string()});
  EXPECT_NE(msg.find("run.json: key \"ranks\": expected [first, last]"), std::string::npos) << msg;
}

TEST(AnalyzeRunDir, RankDirectoryOutsideTheRunIsSkippedWithANote) {
  const fs::path run = copy_run("stale");
  fs::copy(run / "rank3", run / "rank9", fs::copy_options::recursive);
  TraceSet set;
  read_paths({run.string()}, set);
  EXPECT_EQ(set.ranks.size(), static_cast<size_t>(kRanks));
  EXPECT_TRUE(has_note(set, "rank9: not read: not a rank of this run (run.json ranks [0, 3])"));
}

}  // namespace
}  // namespace ppstream::analyze
