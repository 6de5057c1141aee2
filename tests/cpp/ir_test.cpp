#include <gtest/gtest.h>

#include "ppstream/program/ir.h"

namespace ppstream {
TEST(Ir, OpKindNamesRoundTrip) {
  for (int k = 0; k <= static_cast<int>(OpKind::OPT_STEP); ++k) {
    auto kind = static_cast<OpKind>(k);
    ASSERT_EQ(parse_op_kind(to_string(kind)), kind);
  }
  EXPECT_FALSE(parse_op_kind("FWD").has_value());
}
TEST(Ir, StageToRankMapping) {
  EXPECT_EQ(pp_rank_of_stage(Stage{7}, 4), 3);
  EXPECT_EQ(chunk_of_stage(Stage{7}, 4), 1);
}
}  // namespace ppstream
