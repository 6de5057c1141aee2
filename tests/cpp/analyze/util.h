// Test helpers: temp files and the public sample paths (tests/data, see its NOTICE.md).
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace ppstream::analyze::testing {

inline std::string sample(const std::string& rel) { return std::string(PPSTREAM_SOURCE_DIR) + "/tests/data/" + rel; }

// A fresh directory under the system temp dir, unique per name and process: ctest runs tests
// in parallel processes, and tests of one suite may share a name.
inline std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("ppstream_analyze_" + name + "_" + std::to_string(static_cast<long>(::getpid())));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline std::string write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace ppstream::analyze::testing
