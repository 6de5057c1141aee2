// Executables installed beside `ppstream` (a virtual environment's bin/, where `pip install .`
// puts it, or the build directory): found through /proc/self/exe, so the CLI hands over to the
// copy that belongs to it, never to another one on PATH.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace ppstream::cli {

// "<directory of /proc/self/exe>/name"; std::nullopt when /proc/self/exe cannot be read.
std::optional<std::string> beside_self(const std::string& name);

// Replaces this process with `argv` (argv[0] is the program: a path for execv, or a bare name
// looked up on PATH when `search_path`). Returns only on failure, with errno set.
void exec_argv(const std::vector<std::string>& argv, bool search_path);

}  // namespace ppstream::cli
