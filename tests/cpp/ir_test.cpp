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
  EXPECT_EQ(pp_rank_of_stage(Stage{7}, 4, Placement::LOOP), 3);
  EXPECT_EQ(chunk_of_stage(Stage{7}, 4), 1);
}
TEST(Ir, MirrorOfPairsSendsAndReceivesAcrossStages) {
  // r3 sends s7's input grad to r2, which receives it for s6; r2 sends s2's output to r3 for s3.
  EXPECT_EQ(mirror_of({P2PKind::SEND_B, Microbatch{15}, Stage{7}, Rank{2}}, Rank{3}),
            (P2POp{P2PKind::RECV_B, Microbatch{15}, Stage{6}, Rank{3}}));
  EXPECT_EQ(mirror_of({P2PKind::SEND_F, Microbatch{4}, Stage{2}, Rank{3}}, Rank{2}),
            (P2POp{P2PKind::RECV_F, Microbatch{4}, Stage{3}, Rank{2}}));
  for (auto k : {P2PKind::SEND_F, P2PKind::RECV_F, P2PKind::SEND_B, P2PKind::RECV_B}) {
    const P2POp op{k, Microbatch{1}, Stage{5}, Rank{0}};
    EXPECT_EQ(mirror_of(mirror_of(op, Rank{1}), Rank{0}), op) << to_string(k);
  }
}
}  // namespace ppstream
