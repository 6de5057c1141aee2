// 1F1B (PipeDream-flush): rank r warms up with pp-1-r forwards so that the last rank starts
// backwards at once, then alternates one forward and one backward, then drains the backwards.
// In-flight activations per rank are bounded by pp - r instead of GPipe's m.
#include <algorithm>

#include "ppstream/schedule/schedule.h"
#include "schedule/args.h"

namespace ppstream {

ComputeOrder schedule_1f1b(int32_t pp, int32_t microbatches) {
  schedule_detail::require_at_least("schedule_1f1b", "pp", pp, 1);
  schedule_detail::require_at_least("schedule_1f1b", "microbatches", microbatches, 1);
  ComputeOrder order(static_cast<size_t>(pp));
  for (int32_t r = 0; r < pp; ++r) {
    auto& actions = order[static_cast<size_t>(r)];
    const Stage s{r};
    const int32_t warmup = std::min(pp - 1 - r, microbatches);
    int32_t next_f = 0;
    int32_t next_b = 0;
    for (; next_f < warmup; ++next_f) actions.push_back({false, Microbatch{next_f}, s});
    for (; next_f < microbatches; ++next_f, ++next_b) {
      actions.push_back({false, Microbatch{next_f}, s});
      actions.push_back({true, Microbatch{next_b}, s});
    }
    for (; next_b < microbatches; ++next_b) actions.push_back({true, Microbatch{next_b}, s});
  }
  return order;
}

}  // namespace ppstream
