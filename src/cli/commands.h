// Each subcommand lives in its own file and registers itself on the CLI11 app.
#pragma once
#include <CLI/CLI.hpp>

namespace ppstream::cli {
// Each returns nothing; the callback it installs sets `exit_code`.
void register_compile(CLI::App& app, int& exit_code);
void register_verify(CLI::App& app, int& exit_code);
void register_simulate(CLI::App& app, int& exit_code);
void register_analyze(CLI::App& app, int& exit_code);
void register_whatif(CLI::App& app, int& exit_code);
void register_train(CLI::App& app, int& exit_code);
void register_tune(CLI::App& app, int& exit_code);
// Hands over to the ppstream-replay executable beside this one (src/cli/replay/).
void register_replay(CLI::App& app, int& exit_code);
}  // namespace ppstream::cli
