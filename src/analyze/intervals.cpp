// Merged-interval sweeps used by every overlap metric.
#include "intervals.h"

#include <algorithm>

namespace ppstream::analyze::detail {

std::vector<Interval> merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second) {
      out.back().second = std::max(out.back().second, iv.second);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

int64_t length(const std::vector<Interval>& merged) {
  int64_t total = 0;
  for (const auto& [s, e] : merged) total += e - s;
  return total;
}

int64_t intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t s = std::max(a[i].first, b[j].first);
    int64_t e = std::min(a[i].second, b[j].second);
    if (e > s) total += e - s;
    if (a[i].second < b[j].second) ++i;
    else ++j;
  }
  return total;
}

}  // namespace ppstream::analyze::detail
