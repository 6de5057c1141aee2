// Runs the `ppstream` binary built next to the test program as a user would (a shell command
// line), for the CLI tests: its exit status and what it printed.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace ppstream::testing_cli {

inline std::string ppstream_binary() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "ppstream").string();
}

struct CliRun {
  int rc = -1;
  std::string out;  // stdout (and stderr, when the command line sends it there: "2>&1")
};

// `ppstream ARGS` through popen; `args` may carry redirections.
inline CliRun run_ppstream(const std::string& args) {
  CliRun r;
  FILE* p = popen((ppstream_binary() + " " + args).c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace ppstream::testing_cli
