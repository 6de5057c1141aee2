// Hardening regressions for the verifier on structurally invalid sets: static rules must not do
// rank or stage arithmetic (e.g. `pp_rank + c * pp` in reduce-once) for a rank outside the world.
#include <gtest/gtest.h>

#include "ppstream/program/format.h"
#include "ppstream/verify/verify.h"

namespace ppstream {
namespace {

TEST(HardenVerify, RankOutsideTheWorldReportsStructureOnly) {
  // Was signed overflow (UBSan) in reduce-once: 2147483647 + 1 * 4.
  const ProgramSet set = parse_program_set(
      "world pp=4 vpp=2 shard=1 replicate=2 expanded=0 mode=hsdp policy=inline\n"
      "r2147483647 compute F mb0 s3\n"
      "r2147483647 dp REDUCE_GRAD s3\n",
      "p.txt");
  const auto v = verify(set);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(),
            "verify: r2147483647: [structure] r2147483647 is outside the world: its PP rank would be 2147483647, but "
            "pp=4 (dp=2 expanded=0)");
}

}  // namespace
}  // namespace ppstream
