// World's HSDP group formula: every rank is in exactly one shard and one replicate group, the
// groups partition the world, and a rank's index in them is its shard / replicate index.
#include <gtest/gtest.h>

#include <set>

#include "ppstream/program/ir.h"

namespace ppstream {
namespace {

TEST(WorldGroups, PartitionTheWorldByTheExpandedNumbering) {
  for (const World w : {World{2, 1, 2, 2, true}, World{3, 2, 4, 1, true}, World{1, 1, 1, 5, true}, World{4, 1, 3, 2, true}}) {
    for (GroupKind k : {GroupKind::SHARD, GroupKind::REPLICATE}) {
      std::set<int32_t> seen;
      const int32_t size = k == GroupKind::SHARD ? w.shard : w.replicate;
      for (int32_t r = 0; r < w.pp * w.dp(); ++r) {
        const auto members = w.group_members(k, w.group_of(k, r));
        ASSERT_EQ(static_cast<int32_t>(members.size()), size);
        const int32_t pp_rank = r / w.dp(), shard_index = r % w.shard, replicate_index = r % w.dp() / w.shard;
        // Members stay in this rank's PP stage, in rank order, at the rank's own index.
        for (size_t j = 0; j < members.size(); ++j) {
          EXPECT_EQ(members[j].v / w.dp(), pp_rank);
          if (j > 0) {
            EXPECT_LT(members[j - 1].v, members[j].v);
          }
        }
        EXPECT_EQ(members[static_cast<size_t>(k == GroupKind::SHARD ? shard_index : replicate_index)].v, r);
        if (members.front().v == r) {
          for (Rank m : members) EXPECT_TRUE(seen.insert(m.v).second) << "r" << m.v << " in two groups";
        }
      }
      EXPECT_EQ(static_cast<int32_t>(seen.size()), w.pp * w.dp());
    }
  }
  // The worked example of docs/semantics.md: pp 2, shard 2, replicate 2, rank 6.
  const World w{2, 1, 2, 2, true};
  EXPECT_EQ(w.group_members(GroupKind::SHARD, w.group_of(GroupKind::SHARD, 6)), (std::vector<Rank>{Rank{6}, Rank{7}}));
  EXPECT_EQ(w.group_members(GroupKind::REPLICATE, w.group_of(GroupKind::REPLICATE, 6)), (std::vector<Rank>{Rank{4}, Rank{6}}));
}

}  // namespace
}  // namespace ppstream
