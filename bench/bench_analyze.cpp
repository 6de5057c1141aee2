// The analyzer beside the vendor tools on the same inputs: parse throughput (Google Benchmark),
// then wall time and peak RSS of `ppstream analyze` (a child process, measured with wait4)
// against Holistic Trace Analysis loading the largest Kineto sample and msprof-analyze on the
// msinsight-level0 Ascend profile, with the ratios printed side by side.
// The vendor tools run from their check scripts' venvs (PPSTREAM_HTA_PYTHON, default
// ~/.cache/ppstream/hta-venv/bin/python; PPSTREAM_MSPROF_VENV, default
// ~/.cache/ppstream/msprof-venv); a tool that is absent is reported as skipped.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"

extern char** environ;

namespace {
namespace fs = std::filesystem;

const std::string kData = std::string(PPSTREAM_SOURCE_DIR) + "/tests/data/";
const std::string kLargest = kData + "kineto/hta-nccl_data.json.gz";
const std::string kAscend = kData + "ascend/msinsight-level0";
constexpr double kDecompressedBytes = 9778890;  // zcat hta-nccl_data.json.gz | wc -c

void BM_ReadKineto(benchmark::State& state) {
  for (auto _ : state) {
    ppstream::analyze::TraceSet set;
    ppstream::analyze::read_paths({kLargest}, set);
    benchmark::DoNotOptimize(set.ranks.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(static_cast<double>(state.iterations()) * kDecompressedBytes));
}
BENCHMARK(BM_ReadKineto)->Unit(benchmark::kMillisecond);

void BM_AnalyzeKineto(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ppstream::analyze::analyze_paths({kLargest}).total.step_time_ms);
  state.SetBytesProcessed(static_cast<int64_t>(static_cast<double>(state.iterations()) * kDecompressedBytes));
}
BENCHMARK(BM_AnalyzeKineto)->Unit(benchmark::kMillisecond);

void BM_AnalyzeAscendLevel0(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ppstream::analyze::analyze_paths({kAscend}).total.span_ms);
}
BENCHMARK(BM_AnalyzeAscendLevel0)->Unit(benchmark::kMillisecond);

struct Cost {
  double seconds = 0, peak_rss_mib = 0;
};

// `ppstream analyze PATH --json` as a child: its own wall time and peak RSS (wait4's rusage).
std::optional<Cost> run_ours(const std::string& path) {
  const std::string exe = (fs::read_symlink("/proc/self/exe").parent_path() / "ppstream").string();
  if (!fs::exists(exe)) return std::nullopt;
  std::vector<std::string> args = {exe, "analyze", path, "--json"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return std::nullopt;
  int status = 0;
  rusage u{};
  wait4(pid, &status, 0, &u);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return Cost{s, static_cast<double>(u.ru_maxrss) / 1024.0};
}

// A check script's `--bench` line: {"seconds": …, "peak_rss_mib": …}.
std::optional<Cost> run_theirs(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return std::nullopt;
  std::string out;
  char line[512];
  while (std::fgets(line, sizeof line, p)) out += line;
  if (pclose(p) != 0) return std::nullopt;
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.contains("seconds")) return std::nullopt;
  return Cost{j["seconds"].get<double>(), j["peak_rss_mib"].get<double>()};
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

void side_by_side(const std::string& input, const std::string& tool, const std::optional<Cost>& ours,
                  const std::optional<Cost>& theirs, const std::string& why_missing) {
  std::printf("%-36s %-28s", input.c_str(), "ppstream analyze");
  if (ours) std::printf(" %9.3f s %9.1f MiB\n", ours->seconds, ours->peak_rss_mib);
  else std::printf(" failed\n");
  std::printf("%-36s %-28s", "", tool.c_str());
  if (!theirs) {
    std::printf(" skipped (%s)\n", why_missing.c_str());
    return;
  }
  std::printf(" %9.3f s %9.1f MiB", theirs->seconds, theirs->peak_rss_mib);
  if (ours) {
    std::printf("   → ppstream %.0f× faster, %.0f× less memory", theirs->seconds / ours->seconds,
                theirs->peak_rss_mib / ours->peak_rss_mib);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  // Our runs first: a spawned child's peak RSS starts from the parent's at spawn time (the exec
  // keeps the high-water mark), so measure before the benchmarks grow this process.
  const auto ours_kineto = run_ours(kLargest);
  const auto ours_ascend = run_ours(kAscend);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const std::string home = env_or("HOME", "/root");
  const std::string hta_py = env_or("PPSTREAM_HTA_PYTHON", home + "/.cache/ppstream/hta-venv/bin/python");
  const std::string msprof_venv = env_or("PPSTREAM_MSPROF_VENV", home + "/.cache/ppstream/msprof-venv");
  const std::string scripts = std::string(PPSTREAM_SOURCE_DIR) + "/scripts/";
  std::printf("\n%-36s %-28s %11s %13s\n", "input", "tool", "wall", "peak RSS");
  side_by_side("kineto/hta-nccl_data.json.gz", "HTA TraceAnalysis (load)", ours_kineto,
               fs::exists(hta_py) ? run_theirs(hta_py + " " + scripts + "hta_check.py --bench " + kLargest) : std::nullopt,
               "set PPSTREAM_HTA_PYTHON; see scripts/hta_check.py");
  side_by_side("ascend/msinsight-level0 (2 ranks)", "msprof-analyze cluster -m all", ours_ascend,
               fs::exists(msprof_venv + "/bin/msprof-analyze")
                   ? run_theirs("python3 " + scripts + "msprof_check.py --bench --venv " + msprof_venv + " " + kAscend)
                   : std::nullopt,
               "set PPSTREAM_MSPROF_VENV; see scripts/msprof_check.py");
  return 0;
}
