// The shared interval arithmetic (program/intervals.h) in both units it serves: ns (int64_t) and ms (double).
#include <gtest/gtest.h>

#include "ppstream/program/intervals.h"

namespace ppstream {
namespace {

TEST(Intervals, MergeDropsEmptyAndJoinsTouching) {
  const IntervalList<int64_t> m = merge_intervals<int64_t>({{5, 7}, {0, 2}, {2, 3}, {4, 4}, {6, 9}});
  EXPECT_EQ(m, (IntervalList<int64_t>{{0, 3}, {5, 9}}));
  EXPECT_EQ(total_length(m), 7);
}

TEST(Intervals, IntersectionAndCoverage) {
  const IntervalList<double> a{{0, 4}, {6, 10}}, b{{3, 7}, {9, 12}};
  EXPECT_DOUBLE_EQ(intersection_length(a, b), 1 + 1 + 1);  // [3,4], [6,7], [9,10]
  EXPECT_DOUBLE_EQ(covered_length<double>({2, 8}, a), 2 + 2);
  EXPECT_DOUBLE_EQ(covered_length<double>({4, 6}, a), 0);
  EXPECT_DOUBLE_EQ(covered_length<double>({11, 13}, b), 1);
}

}  // namespace
}  // namespace ppstream
