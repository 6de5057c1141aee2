// Hardening regression: a step_trace_time.csv Step that is not an integer a double holds exactly
// (2.3e80, 1.5) is a TraceError naming the file and line (the 2.3e80 was cast to int64:
// undefined behaviour that gcc's -fsanitize=undefined does not report, see CMakeLists.txt).
#include <gtest/gtest.h>

#include <filesystem>

#include "../analyze/util.h"
#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze {
namespace {

TEST(HardenAscend, StepTraceCsvStepOutOfRangeIsATraceError) {
  const auto dir = testing::temp_dir("harden_ascend_csv");
  for (const std::string step : {"2.3e80", "-2.3e80", "1.5", "9.1e15"}) {
    const std::string path = testing::write_file(
        dir / "step_trace_time.csv", "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free\n" +
                                         step + ",75.5,14.6,6.9,21.5,6.9\n");
    try {
      analyze_paths({path});
      ADD_FAILURE() << step << ": accepted";
    } catch (const TraceError& e) {
      EXPECT_EQ(std::string(e.what()), path + ": line 2: Step '" + step + "'; expected an integer");
    }
  }
}

}  // namespace
}  // namespace ppstream::analyze
