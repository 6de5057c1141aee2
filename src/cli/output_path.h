// Checks of a file the CLI will write (tune --apply, whatif --svg / --trace), made before the work
// that fills it (which can take minutes), so a bad path fails at once.
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace ppstream::cli {

// Throws std::invalid_argument ("FLAG PATH: why") when `path` is a directory, its directory does
// not exist or cannot be written in, it exists and cannot be written, or it is one of `inputs`
// (the files `reader` reads).
void check_output_path(const std::string& flag, const std::string& path, const std::vector<std::string>& inputs = {},
                       const std::string& reader = "the command");

// The validator of an option that names a file to write (simulate / whatif --trace, --svg): an
// empty value ('') is refused ("expected a file to write"), not taken as "no file".
CLI::Validator output_file();

}  // namespace ppstream::cli
