// Hardening regression: a profiler_info_<rank>.json whose rank does not fit in int32 is a
// TraceError naming the file (was std::stoi's bare "stoi" out_of_range text).
#include <gtest/gtest.h>

#include <filesystem>

#include "../analyze/util.h"
#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze {
namespace {

TEST(HardenAscend, ProfilerInfoRankOutOfRangeIsATraceError) {
  const auto dir = testing::temp_dir("harden_ascend_rank") / "r_ascend_pt";
  testing::write_file(dir / "profiler_info_99999999999.json", "{}");
  testing::write_file(dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json", "[]");
  try {
    analyze_paths({dir.string()});
    ADD_FAILURE() << "accepted";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "profiler_info_99999999999.json").string() +
                                         ": rank '99999999999' in the file name; expected 0..2147483647");
  }
  std::filesystem::remove_all(dir.parent_path());
}

}  // namespace
}  // namespace ppstream::analyze
