// Interval arithmetic on half-open [start, end) intervals, the one implementation behind every
// overlap figure: the simulator's (ms, double) and the analyzer's (ns, int64_t). Header-only
// templates in the lowest area so that sim and analyze share them without depending on each other.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

namespace ppstream {

template <class T>
using IntervalList = std::vector<std::pair<T, T>>;

// Sorts, drops empty intervals and merges overlapping or touching ones into a disjoint union.
template <class T>
IntervalList<T> merge_intervals(IntervalList<T> v) {
  std::sort(v.begin(), v.end());
  IntervalList<T> out;
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second) out.back().second = std::max(out.back().second, iv.second);
    else out.push_back(iv);
  }
  return out;
}

// Total length of a disjoint union.
template <class T>
T total_length(const IntervalList<T>& merged) {
  T total{};
  for (const auto& [s, e] : merged) total += e - s;
  return total;
}

// |a ∩ b| for two disjoint, sorted unions, in one linear sweep.
template <class T>
T intersection_length(const IntervalList<T>& a, const IntervalList<T>& b) {
  T total{};
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const T s = std::max(a[i].first, b[j].first), e = std::min(a[i].second, b[j].second);
    if (e > s) total += e - s;
    if (a[i].second < b[j].second) ++i;
    else ++j;
  }
  return total;
}

// Length of `a` covered by a disjoint, sorted union: a binary search to the first interval ending
// after a's start, so that n queries against n intervals cost O(n log n).
template <class T>
T covered_length(std::pair<T, T> a, const IntervalList<T>& sorted) {
  T total{};
  auto it = std::lower_bound(sorted.begin(), sorted.end(), a.first,
                             [](const std::pair<T, T>& iv, T x) { return iv.second < x; });
  for (; it != sorted.end() && it->first < a.second; ++it) {
    const T s = std::max(a.first, it->first), e = std::min(a.second, it->second);
    if (e > s) total += e - s;
  }
  return total;
}

}  // namespace ppstream
