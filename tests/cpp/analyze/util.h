// Test helpers: temp files and the public sample paths (tests/data, see its NOTICE.md).
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace ppstream::analyze::testing {

inline std::string sample(const std::string& rel) { return std::string(PPSTREAM_SOURCE_DIR) + "/tests/data/" + rel; }

// Every directory temp_dir made, removed when the test process exits.
struct TempDirs {
  std::vector<std::filesystem::path> dirs;
  ~TempDirs() {
    for (const auto& d : dirs) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
};
inline TempDirs& temp_dirs() {
  static TempDirs t;
  return t;
}

// A fresh directory under the system temp dir, unique per name and process: ctest runs tests
// in parallel processes, and tests of one suite may share a name. Removed at exit.
inline std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("ppstream_analyze_" + name + "_" + std::to_string(static_cast<long>(::getpid())));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  temp_dirs().dirs.push_back(d);
  return d;
}

// One Kineto complete event on pid 0, tid 7; `args` is the text inside its args object.
inline std::string kineto_event(const std::string& cat, const std::string& name, double ts, double dur,
                                const std::string& args) {
  return R"({"ph":"X","cat":")" + cat + R"(","name":")" + name + R"(","pid":0,"tid":7,"ts":)" + std::to_string(ts) +
         R"(,"dur":)" + std::to_string(dur) + R"(,"args":{)" + args + "}}";
}

inline std::string write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace ppstream::analyze::testing
