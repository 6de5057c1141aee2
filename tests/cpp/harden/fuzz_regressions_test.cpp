// Replays every kept fuzz input through its target (fuzz/targets.h): the seed corpus under
// fuzz/corpus/<target>/ and every input that once crashed or broke a property under
// fuzz/regressions/<target>/. Each must give a located error or an in-range result.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "targets.h"

namespace ppstream::fuzz {
namespace {

namespace fs = std::filesystem;

size_t replay(const std::string& kind) {
  size_t n = 0;
  for (const std::string& target : target_names()) {
    const fs::path dir = fs::path(PPSTREAM_SOURCE_DIR) / "fuzz" / kind / target;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream data;
      data << in.rdbuf();
      const auto bad = run_target(target, data.str());
      EXPECT_FALSE(bad) << e.path() << ": " << bad.value_or("");
      ++n;
    }
  }
  return n;
}

TEST(HardenFuzz, RegressionInputsGiveLocatedErrorsOrValidResults) { EXPECT_GT(replay("regressions"), 0u); }

TEST(HardenFuzz, SeedCorpusGivesLocatedErrorsOrValidResults) { EXPECT_GT(replay("corpus"), 0u); }

}  // namespace
}  // namespace ppstream::fuzz
