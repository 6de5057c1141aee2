// The front ends' common ending: parse the command line and turn errors into exit codes.
#pragma once
#include <CLI/CLI.hpp>

namespace ppstream::cli {

// Parses argv into `app` (whose callbacks do the work and set `exit_code`). Returns 0 for --help,
// 2 for a usage error (CLI11's message printed: a failed range or member check, a missing or
// extra argument; CLI11's own codes, 104-109, would set these apart from the other bad options),
// 2 after printing "ppstream: <what>" for any other exception, else `exit_code`.
int run_app(CLI::App& app, int argc, char** argv, const int& exit_code);

}  // namespace ppstream::cli
