// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, §3.1): 1F1B with each
// backward split into I (input grad, sent upstream at once) and W (weight grad, needed only by
// the reduction). Rank r keeps 1F1B's warm-up of pp-1-r forwards and F/I order, and runs the W
// of a microbatch only once r later I's have run: the last rank's deferred W's fill the gaps where
// 1F1B's cool-down idles. In-flight microbatches (F done, W not) stay at most pp, as in 1F1B.
// With F = I = W = 1 and free P2P the step is 3m + pp - 1 slots for m >= pp: bubble
// (pp-1)(T_F + T_B - T_W) in the paper's notation (T_B = I), against 1F1B's (pp-1)(T_F+T_B+T_W).
#include <algorithm>
#include <deque>

#include "ppstream/schedule/schedule.h"
#include "schedule/args.h"

namespace ppstream {

ComputeOrder schedule_zb_h1(int32_t pp, int32_t microbatches) {
  schedule_detail::require_at_least("schedule_zb_h1", "pp", pp, 1);
  schedule_detail::require_at_least("schedule_zb_h1", "microbatches", microbatches, 1);
  ComputeOrder order(static_cast<size_t>(pp));
  for (int32_t r = 0; r < pp; ++r) {
    auto& actions = order[static_cast<size_t>(r)];
    const Stage s{r};
    auto f = [&](int32_t mb) { actions.push_back({false, Microbatch{mb}, s}); };
    std::deque<int32_t> pending_w;  // I done, W not yet
    auto i_then_w = [&](int32_t mb, size_t keep) {
      actions.push_back({true, Microbatch{mb}, s, BackwardPart::INPUT});
      pending_w.push_back(mb);
      if (pending_w.size() > keep) {
        actions.push_back({true, Microbatch{pending_w.front()}, s, BackwardPart::WEIGHT});
        pending_w.pop_front();
      }
    };
    const int32_t warmup = std::min(pp - 1 - r, microbatches);
    for (int32_t mb = 0; mb < warmup; ++mb) f(mb);
    for (int32_t k = 0; k < microbatches - warmup; ++k) {
      f(k + warmup);
      i_then_w(k, static_cast<size_t>(r));
    }
    for (int32_t mb = microbatches - warmup; mb < microbatches; ++mb) i_then_w(mb, 0);  // cool-down
    for (int32_t mb : pending_w) actions.push_back({true, Microbatch{mb}, s, BackwardPart::WEIGHT});
  }
  return order;
}

}  // namespace ppstream
