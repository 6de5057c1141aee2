// Parse throughput (MB/s of decompressed JSON) and peak memory of the analyzer on the largest
// sample, printed beside Holistic Trace Analysis loading the same file in the same run
// (HTA from PPSTREAM_HTA_PYTHON, default /tmp/hta-venv/bin/python; skipped when absent).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"

namespace {

const std::string kLargest = std::string(PPSTREAM_SHARED_DIR) + "/traces/kineto/hta-nccl_data.json.gz";
constexpr double kDecompressedBytes = 9778890;  // zcat hta-nccl_data.json.gz | wc -c

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

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

}  // namespace

int main(int argc, char** argv) {
  double before = peak_rss_mib();
  {
    ppstream::analyze::TraceSet set;
    ppstream::analyze::read_paths({kLargest}, set);
  }
  double after = peak_rss_mib();
  std::printf("ppstream: %s (%.1f MB decompressed): peak RSS %.1f MiB (%.1f MiB before the parse)\n",
              kLargest.c_str(), kDecompressedBytes / 1e6, after, before);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const char* env = std::getenv("PPSTREAM_HTA_PYTHON");
  std::string py = env ? env : "/tmp/hta-venv/bin/python";
  std::string script = std::string(PPSTREAM_SOURCE_DIR) + "/scripts/hta_check.py";
  if (!std::filesystem::exists(py)) {
    std::printf("HTA: %s not found; set PPSTREAM_HTA_PYTHON (see scripts/hta_check.py)\n", py.c_str());
    return 0;
  }
  std::string cmd = py + " " + script + " --bench " + kLargest + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  char line[512];
  std::string out;
  while (p && std::fgets(line, sizeof line, p)) out += line;
  if (p) pclose(p);
  std::printf("HTA TraceAnalysis load of the same file: %s", out.empty() ? "failed\n" : out.c_str());
  return 0;
}
