// The analyzer's names for the shared interval arithmetic (program/intervals.h) on [start, end)
// ns intervals.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ppstream/program/intervals.h"

namespace ppstream::analyze::detail {

using Interval = std::pair<int64_t, int64_t>;  // [start, end) in ns

inline std::vector<Interval> merge(std::vector<Interval> v) { return merge_intervals(std::move(v)); }
inline int64_t length(const std::vector<Interval>& merged) { return total_length(merged); }
inline int64_t intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  return intersection_length(a, b);
}

}  // namespace ppstream::analyze::detail
