// Scaling of simulate and verify with program size: wall time and peak RSS per size, each
// measured in its own child process (peak RSS is per process), and the fitted exponent k of
// time ~ n^k (least squares on log-log). Issue 12: simulate must stay near M·log M in
// micro_batch_num (seed-300b-moe, up to 65,536) and verify bounded on 16 ranks × 100k
// instructions. Not a Google Benchmark: one run per size is the measurement.
//   bench_scaling            all tables;   bench_scaling sim | verify | cluster   one of them
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/lower/lower.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/verify/verify.h"

namespace {

using namespace ppstream;

struct Sample {
  double n = 0, seconds = 0, cpu_seconds = 0, rss_mib = 0;  // wall, user + sys, peak RSS
};

// Runs `work` in a child; returns its wall time (measured in the child) and peak RSS.
Sample measure(double n, const std::function<void()>& work) {
  int fd[2];
  if (pipe(fd) != 0) return {n, NAN, NAN, NAN};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    const auto t0 = std::chrono::steady_clock::now();
    work();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    (void)!write(fd[1], &s, sizeof s);
    _exit(0);
  }
  close(fd[1]);
  double s = NAN;
  if (read(fd[0], &s, sizeof s) != sizeof s) s = NAN;
  close(fd[0]);
  int status = 0;
  rusage u{};
  wait4(pid, &status, 0, &u);
  const double cpu = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
                     static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  return {n, s, cpu, static_cast<double>(u.ru_maxrss) / 1024.0};
}

// Least-squares slope of log(time) over log(n); `cpu`: user + sys time (robust on a loaded
// machine), else wall time.
double exponent(const std::vector<Sample>& v, bool cpu) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Sample& s : v) {
    const double x = std::log(s.n), y = std::log(cpu ? s.cpu_seconds : s.seconds);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double k = static_cast<double>(v.size());
  return (k * sxy - sx * sy) / (k * sxx - sx * sx);
}

// The exponent the same fit gives for a time of exactly n·log n at these sizes (the bound the
// issue sets): k above it means faster growth than n·log n.
double nlogn_exponent(std::vector<Sample> v) {
  for (Sample& s : v) s.cpu_seconds = s.n * std::log(s.n);
  return exponent(v, true);
}

void print(const char* title, const char* n_name, const std::vector<Sample>& v) {
  std::printf("%s\n%12s %10s %10s %12s\n", title, n_name, "wall_s", "cpu_s", "peak_rss_mib");
  for (const Sample& s : v) std::printf("%12.0f %10.3f %10.3f %12.1f\n", s.n, s.seconds, s.cpu_seconds, s.rss_mib);
  std::printf("fitted exponent (time ~ n^k): k = %.2f on cpu_s, %.2f on wall_s (n log n at these sizes: k = %.2f)\n\n",
              exponent(v, true), exponent(v, false), nlogn_exponent(v));
}

void bench_sim() {
  const PipelineConfig base = load_config_file(std::string(PPSTREAM_SOURCE_DIR) + "/examples/seed-300b-moe.yaml");
  // The seed's tails are fixed delays, so its trials are one draw (sim/trials.h draws_differ);
  // the tail example adds a lognormal draw on every reduction: there each trial is an engine run.
  const PipelineConfig tail = load_config_file(std::string(PPSTREAM_SOURCE_DIR) + "/examples/seed-300b-moe-tail.yaml");
  std::vector<Sample> v;
  for (int m = 1024; m <= 65536; m *= 2)
    v.push_back(measure(m, [&] {
      PipelineConfig cfg = base;
      apply_overrides(cfg, {{"micro_batch_num", std::to_string(m)}});
      sim::simulate(cfg, sim::SimOptions{});
    }));
  print("simulate seed-300b-moe.yaml --set micro_batch_num=M (compile + verify + engine + metrics)", "M", v);
}

void bench_verify() {
  // 16 PP ranks, 1F1B, no DP: about 6 instructions per microbatch and rank (F, B, two batches,
  // events); M is chosen for 12.5k .. 100k instructions per rank.
  std::vector<Sample> v;
  for (int m : {2048, 4096, 8192, 16384}) {
    PipelineConfig cfg = load_config_text("pipeline_parallel_size: 16\nnum_layers: 16\nmicro_batch_num: " +
                                          std::to_string(m) + "\n", "bench.yaml");
    LowerOptions lo;
    lo.verify_each_pass = false;
    const ProgramSet set = compile(cfg, lo);
    size_t per_rank = 0;
    for (const Program& p : set.programs) per_rank = std::max(per_rank, p.instrs.size());
    v.push_back(measure(static_cast<double>(per_rank), [&] { verify(set); }));
  }
  print("verify, 16 ranks (pp=16, 1f1b): n = instructions per rank (set compiled in the parent)", "instr/rank", v);
}

// Issue 19 item 4: the seed's cluster (16,384 ranks) over 100 straggler trials (one draw for the
// seed's fixed tails, 100 drawn ones for the tail example: the goal's row), and one step of the
// 131,072-rank cluster (replicate 1024), each in its own child, beside the figures the issue
// measured before the trial runner (quiet machine, Release as `pip install .` builds it) and the
// issue's goals.
void bench_cluster() {
  const PipelineConfig base = load_config_file(std::string(PPSTREAM_SOURCE_DIR) + "/examples/seed-300b-moe.yaml");
  // The seed's tails are fixed delays, so its trials are one draw (sim/trials.h draws_differ);
  // the tail example adds a lognormal draw on every reduction: there each trial is an engine run.
  const PipelineConfig tail = load_config_file(std::string(PPSTREAM_SOURCE_DIR) + "/examples/seed-300b-moe-tail.yaml");
  // The trials' workers, set here (what SimOptions::threads 0 means: sim/trials.h parallel_for).
  const auto workers = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("simulate seed-300b-moe.yaml (compile + verify + every trial + metrics; trials on %d worker threads)\n",
              workers);
  // Each run twice: the expanded world's engine (SimOptions::replica_vector false, what main ran
  // before the replica vector) and the replica vector (the default); the same output.
  // cores = cpu_s / wall_s of the vector run, the cores the child had on average; load: the
  // 1-minute load average as the row began (with the kernel's autogroup scheduling another
  // session's busy core halves a 2-core share).
  std::printf("%-48s %8s %8s %8s  %8s %8s %8s %6s %6s  %-22s %s\n", "run", "exp_wall", "exp_cpu", "exp_gb", "vec_wall",
              "vec_cpu", "vec_gb", "cores", "load", "issue (before)", "goal");
  // Each row is printed as soon as it is measured (the last ones take minutes).
  auto row = [](const char* what, const char* before, const char* goal, double load, const Sample& e, const Sample& v) {
    std::printf("%-48s %8.2f %8.2f %8.2f  %8.2f %8.2f %8.2f %6.2f %6.1f  %-22s %s\n", what, e.seconds, e.cpu_seconds,
                e.rss_mib * 1048576.0 / 1e9, v.seconds, v.cpu_seconds, v.rss_mib * 1048576.0 / 1e9,
                v.cpu_seconds / v.seconds, load, before, goal);
    std::fflush(stdout);
  };
  auto cluster = [&](int trials, const char* replicate, const PipelineConfig* from, bool vector) {
    return measure(trials, [&] {
      PipelineConfig cfg = from ? *from : base;
      if (replicate) apply_overrides(cfg, {{"data_parallel.replicate_size", replicate}});
      sim::SimOptions o;
      o.cluster = true;
      o.trials = trials;
      o.threads = workers;
      o.replica_vector = vector;
      sim::simulate(cfg, o);
    });
  };
  auto both = [&](const char* what, const char* before, const char* goal, int trials, const char* replicate,
                  const PipelineConfig* from = nullptr) {
    double load = NAN;
    if (getloadavg(&load, 1) != 1) load = NAN;
    const Sample e = cluster(trials, replicate, from, false);
    row(what, before, goal, load, e, cluster(trials, replicate, from, true));
  };
  both("--cluster (16,384 ranks)", "6.1-8.6 s, 0.9 GB", "", 1, nullptr);
  both("--cluster --trials 10", "49 s", "", 10, nullptr);
  // The seed's 100 trials are one draw (one engine run); the goal's figure is the tail
  // example's 100 drawn trials (100 engine runs), the last 16,384-rank row.
  both("--cluster --trials 100 (one draw)", "~8 min (10 x 49 s)", "", 100, nullptr);
  both("tail example --cluster --trials 10 (drawn)", "", "", 10, nullptr, &tail);
  both("tail example --cluster --trials 100 (drawn)", "~8 min (10 x 49 s)", "< 60 s", 100, nullptr, &tail);
  both("--cluster, replicate_size=1024 (131,072 ranks)", "63 s, 7.1 GB", "< 10 s, < 4 GB", 1, "1024");
  double load[3] = {NAN, NAN, NAN};
  if (getloadavg(load, 3) > 0) std::printf("load average now: %.1f %.1f %.1f\n", load[0], load[1], load[2]);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "all";
  if (which == "all" || which == "sim") bench_sim();
  if (which == "all" || which == "verify") bench_verify();
  if (which == "all" || which == "cluster") bench_cluster();
  return 0;
}
