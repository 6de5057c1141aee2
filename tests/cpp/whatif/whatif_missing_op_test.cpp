// breaker5 F7: the lifting's "missing op" error cites the step DP rank 0 has the op in (the step
// the other DP rank lacks it in, not the first step) and names the file.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../analyze/util.h"
#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {
namespace {
namespace tt = analyze::testing;

// Seen failing on main: "DP rank 1, stage 0, step 2, …: missing (DP rank 0 has it in step 0)",
// no file named.
TEST(WhatIfMissingOp, ErrorCitesTheStepAndTheFile) {
  const std::string text = tt::file_text(tt::sample("whatif/syn/timeline-SMALL.json.gz"));
  nlohmann::json kept = nlohmann::json::array();
  int32_t last = 0;
  for (const auto& e : nlohmann::json::parse(text))
    if (e.value("ph", "") == "X") last = std::max(last, e["args"]["step"].get<int32_t>());
  for (const auto& e : nlohmann::json::parse(text))
    if (!(e.value("ph", "") == "X" && e.value("pid", -1) == 1 && e["args"]["step"] == last)) kept.push_back(e);
  const std::string p = tt::write_file(tt::temp_dir("whatif_missing_op") / "dp1short.json", kept.dump());
  std::string e = "(no error)";
  try {
    analyze_paths({p});
  } catch (const std::exception& x) {
    e = x.what();
  }
  EXPECT_NE(e.find(p + ": DP rank 1, stage 0, step " + std::to_string(last) + ", "), std::string::npos) << e;
  EXPECT_NE(e.find("missing (DP rank 0 has it in step " + std::to_string(last) + ")"), std::string::npos) << e;
}

}  // namespace
}  // namespace ppstream::whatif
