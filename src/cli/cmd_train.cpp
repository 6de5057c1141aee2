// `ppstream train CONFIG [args...]`: hands over to the Python runtime (ppstream.mindspore.train),
// which compiles the programs, launches one MindSpore worker per rank with msrun and reports.
//
// Interpreter choice: `python3` next to this executable (a virtual environment's bin/, where
// `pip install .` puts `ppstream`), else `python3` on PATH. The process image is replaced
// (execv/execvp), so exit codes and signals are the Python launcher's own.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "beside_self.h"
#include "commands.h"
#include "ppstream/config/config.h"

namespace ppstream::cli {
namespace {

// "<dir of /proc/self/exe>/python3" when it exists, else empty (use PATH).
std::string sibling_python() {
  const auto candidate = beside_self("python3");
  std::error_code ec;
  return candidate && std::filesystem::exists(*candidate, ec) ? *candidate : std::string{};
}

[[noreturn]] void exec_python(const std::vector<std::string>& args) {
  const std::string python = sibling_python();
  std::vector<std::string> argv_s = {python.empty() ? "python3" : python, "-m", "ppstream.mindspore.train"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  exec_argv(argv_s, python.empty());
  std::cerr << "ppstream train: cannot start " << argv_s[0] << ": " << std::strerror(errno)
            << " (expected python3 beside ppstream or on PATH, with ppstream and mindspore installed)\n";
  std::exit(127);
}

// The MindSpore runtime runs the fused backward B only: a zero-bubble schedule (I and W split)
// is refused here, before any worker starts. A config that does not load is left to the Python
// launcher, which reports it with its own arguments (--set …).
void refuse_split_backward(const std::vector<std::string>& args) {
  if (args.empty() || args.front().empty() || args.front()[0] == '-') return;
  PipelineConfig cfg;
  try {
    cfg = load_config_file(args.front());
  } catch (const std::exception&) {
    return;
  }
  if (!splits_backward(cfg.schedule)) return;
  std::cerr << "ppstream train: " << args.front() << ": schedule=" << to_string(cfg.schedule)
            << " splits the backward into I (input grad) and W (weight grad), but the MindSpore runtime runs only the "
               "fused backward B (docs/runtime.md); use schedule 1f1b or interleaved_1f1b to train, or "
               "`ppstream simulate` / `ppstream verify` to study "
            << to_string(cfg.schedule) << "\n";
  std::exit(2);
}

}  // namespace

void register_train(CLI::App& app, int& /*exit_code*/) {
  auto* sub = app.add_subcommand(
      "train",
      "train with the MindSpore runtime: ppstream train CONFIG [--steps N] [--out DIR] [--profile] "
      "[--worker-num N --local-worker-num N --master-addr H --master-port P --node-rank K] ... (train --help)");
  sub->set_help_flag();  // `ppstream train --help` is the Python launcher's help
  sub->allow_extras();
  sub->prefix_command();  // everything after `train` goes to the Python launcher untouched
  sub->callback([sub]() {
    refuse_split_backward(sub->remaining());
    exec_python(sub->remaining());
  });
}

}  // namespace ppstream::cli
