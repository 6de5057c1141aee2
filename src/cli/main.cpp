// `ppstream`: compile, verify, simulate, tune, analyze/diff, replay (hands over to
// ppstream-replay) and train (hands over to Python).
#include "commands.h"
#include "run_app.h"

int main(int argc, char** argv) {
  CLI::App app{"ppstream: pipeline-parallel x HSDP stream programs"};
  app.require_subcommand(1);
  int exit_code = 0;
  ppstream::cli::register_compile(app, exit_code);
  ppstream::cli::register_verify(app, exit_code);
  ppstream::cli::register_simulate(app, exit_code);
  ppstream::cli::register_analyze(app, exit_code);
  ppstream::cli::register_whatif(app, exit_code);
  ppstream::cli::register_train(app, exit_code);
  ppstream::cli::register_tune(app, exit_code);
  ppstream::cli::register_replay(app, exit_code);
  return ppstream::cli::run_app(app, argc, argv, exit_code);
}
