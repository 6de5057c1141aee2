// The fuzz targets' bodies, shared by the libFuzzer entry points (fuzz/entry.cpp, one binary per
// target, built with -DPPSTREAM_FUZZ=ON under clang) and by the regression test that replays
// fuzz/regressions/<target>/* in the ordinary test suite (tests/cpp/harden/fuzz_regressions_test.cpp).
//
// Every target feeds one reader and checks the properties of issue 12 on every input: either
// the reader's own located error (ConfigError, ParseError, TraceError) whose text names the
// input, or a result whose times are finite and non-negative and whose ratios lie in [0, 1].
// Anything else (another exception type, an unlocated message, a figure out of range) is a
// violation. Sanitizer reports, time and memory limits are the fuzzer's (-timeout, -rss_limit_mb).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppstream::fuzz {

// Target names: config_yaml, set_override, program_text, program_json, chrome_json,
// chrome_json_gz, ascend_dir, csv.
const std::vector<std::string>& target_names();

// Runs one input through `target`; returns a description of the violated property, or nullopt.
// Throws std::invalid_argument for an unknown target name.
std::optional<std::string> run_target(std::string_view target, std::string_view data);

}  // namespace ppstream::fuzz
