// Interval arithmetic on [start, end) ns intervals: merge to a union, measure, intersect.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace ppstream::analyze::detail {

using Interval = std::pair<int64_t, int64_t>;  // [start, end) in ns

// Sorts and merges overlapping or touching intervals into a disjoint union.
std::vector<Interval> merge(std::vector<Interval> v);
// Total length of a disjoint union.
int64_t length(const std::vector<Interval>& merged);
// |a ∩ b| for two disjoint unions, in one linear sweep.
int64_t intersection(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace ppstream::analyze::detail
