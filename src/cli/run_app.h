// The front ends' common ending: parse the command line and turn errors into exit codes.
#pragma once
#include <CLI/CLI.hpp>

namespace ppstream::cli {

// Parses argv into `app` (whose callbacks do the work and set `exit_code`). Returns CLI11's code
// for a usage error (help included), 2 after printing "ppstream: <what>" for any other
// exception, else `exit_code`.
int run_app(CLI::App& app, int argc, char** argv, const int& exit_code);

}  // namespace ppstream::cli
