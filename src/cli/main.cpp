// `ppstream`: compile, verify, simulate, analyze/diff and train (the last hands over to Python).
#include <exception>
#include <iostream>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"ppstream: pipeline-parallel x HSDP stream programs"};
  app.require_subcommand(1);
  int exit_code = 0;
  ppstream::cli::register_compile(app, exit_code);
  ppstream::cli::register_verify(app, exit_code);
  ppstream::cli::register_simulate(app, exit_code);
  ppstream::cli::register_analyze(app, exit_code);
  ppstream::cli::register_train(app, exit_code);
#ifdef PPSTREAM_HAVE_REPLAY
  ppstream::cli::register_replay(app, exit_code, argc, argv);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "ppstream: " << e.what() << "\n";
    return 2;
  }
  return exit_code;
}
