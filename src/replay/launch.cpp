// The launcher side of `ppstream replay`: re-executes the same command under `mpirun` in its
// own process group (mpirun gets SIGTERM if the launcher dies, each worker SIGKILL if mpirun
// dies), forwards SIGINT/SIGTERM to the group, and kills the group when the workers' own
// timeout report did not end the run within a grace period.
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include "ppstream/replay/replay.h"
#include "replay/clock.h"

namespace ppstream::replay {
namespace {

constexpr double kGraceS = 20;  // after the workers' own timeout (MPI startup, the report)
std::atomic<int> g_signal{0};
void on_signal(int sig) { g_signal = sig; }

std::vector<std::string> mpirun_argv(const std::vector<std::string>& argv, int32_t np, const std::string& hostfile) {
  std::vector<std::string> a = {"mpirun", "-np", std::to_string(np), "--bind-to", "none",
                                // Progress: sleep-based polling in our thread; yield when idle.
                                "--mca", "mpi_yield_when_idle", "1",
                                // Shared memory without single-copy (CMA needs ptrace rights containers lack).
                                "--mca", "btl_vader_single_copy_mechanism", "none"};
  if (geteuid() == 0) a.emplace_back("--allow-run-as-root");
  // One host: shared memory only (no TCP setup), more ranks than cores allowed (replay's
  // streams sleep). A hostfile needs TCP between hosts, and its slots are the user's word on
  // how many ranks each host takes: no --oversubscribe (docs/replay.md, "Across machines").
  if (hostfile.empty()) a.insert(a.end(), {"--oversubscribe", "--mca", "btl", "self,vader"});
  else a.insert(a.end(), {"--hostfile", hostfile});
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  a.push_back(ec ? argv.at(0) : self.string());
  a.insert(a.end(), argv.begin() + 1, argv.end());
  return a;
}

}  // namespace

int launch(const std::vector<std::string>& argv, int32_t np, const std::string& hostfile, double timeout_s) {
  const std::vector<std::string> args = mpirun_argv(argv, np, hostfile);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error(std::string("replay: fork: ") + std::strerror(errno));
  if (child == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1) _exit(1);  // the launcher already died
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    std::vector<char*> cargs;
    for (const std::string& s : args) cargs.push_back(const_cast<char*>(s.c_str()));
    cargs.push_back(nullptr);
    execvp("mpirun", cargs.data());
    std::cerr << "replay: cannot start mpirun: " << std::strerror(errno) << " (install openmpi-bin)\n";
    _exit(127);
  }
  setpgid(child, child);
  const double deadline = now_ms() + (timeout_s + kGraceS) * 1000;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(child, &status, WNOHANG);
    if (r == child) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return 128 + WTERMSIG(status);
    }
    if (g_signal != 0 || now_ms() > deadline) {
      if (g_signal == 0) std::cerr << fmt::format("replay: no result {:.0f} s past --timeout; killing mpirun and its workers\n", kGraceS);
      kill(-child, SIGTERM);
      std::this_thread::sleep_for(std::chrono::seconds(2));
      kill(-child, SIGKILL);
      waitpid(child, &status, 0);
      return g_signal != 0 ? 128 + g_signal.load() : 124;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace ppstream::replay
