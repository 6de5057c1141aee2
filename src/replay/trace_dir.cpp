// replay --trace DIR: one directory per policy when several run (docs/replay.md "Traces").
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "ppstream/replay/replay.h"

namespace ppstream::replay {

std::string policy_trace_dir(const std::string& trace_dir, ReducePolicy policy, size_t policies) {
  namespace fs = std::filesystem;
  const fs::path dir = policies > 1 ? fs::path(trace_dir) / to_string(policy) : fs::path(trace_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw std::invalid_argument("replay: --trace " + trace_dir + ": cannot create directory " + dir.string() + ": " +
                                (ec ? ec.message() : "a file of that name is in the way") +
                                "; expected a directory path (created when missing)");
  return dir.string();
}

}  // namespace ppstream::replay
