// `ppstream replay ARGS`: hands over to `ppstream-replay ARGS`, the executable beside this one
// (docs/replay.md). Replay is its own program so that `ppstream` neither links nor loads Open
// MPI: the CLI runs on machines without it and starts with a smaller footprint (docs/analyze.md,
// "Bench"). The process image is replaced (execv), so exit codes, signals and the process id
// the launcher's workers watch are ppstream-replay's own.
#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "beside_self.h"
#include "commands.h"

namespace ppstream::cli {

void register_replay(CLI::App& app, int& /*exit_code*/) {
  auto* sub = app.add_subcommand(
      "replay",
      "run the verified stream programs over MPI with real concurrency; measured vs simulated: ppstream replay "
      "CONFIG [--reduce-grad inline|async|both] [--steps N] [--json] [--trace DIR] [--np N] ... (replay --help; "
      "the executable ppstream-replay)");
  sub->set_help_flag();  // `ppstream replay --help` is ppstream-replay's help
  sub->allow_extras();
  sub->prefix_command();  // everything after `replay` goes to ppstream-replay untouched
  sub->callback([sub]() {
    const auto exe = beside_self("ppstream-replay");
    if (!exe) {
      std::cerr << "ppstream replay: cannot read /proc/self/exe to find ppstream-replay beside ppstream\n";
      std::exit(127);
    }
    std::vector<std::string> argv = {*exe};
    const std::vector<std::string> rest = sub->remaining();
    argv.insert(argv.end(), rest.begin(), rest.end());
    exec_argv(argv, false);
    std::cerr << "ppstream replay: cannot start " << *exe << ": " << std::strerror(errno)
              << " (replay is its own executable, built and installed beside ppstream only when CMake finds "
                 "Open MPI: apt-get install libopenmpi-dev openmpi-bin, then rebuild or pip install . again)\n";
    std::exit(127);
  });
}

}  // namespace ppstream::cli
