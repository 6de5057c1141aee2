// Interleaved 1F1B (Megatron-LM; PyTorch ScheduleInterleaved1F1B): each rank holds v model
// chunks (chunk c of rank r is global stage c*pp + r). Microbatches run in rounds of g per
// chunk: a rank forwards g microbatches through chunk 0, the same g through chunk 1, …, then the
// next round; backwards visit the chunks in reverse. The longer warm-up, (pp-r-1)*2 + (v-1)*g
// forwards, lets the first backward's gradient arrive before the rank would otherwise idle
// (Narayanan et al., SC'21 §2.2). g = pp when pp divides m (Megatron's group of pp); otherwise
// PyTorch's flexible rounds: rounds = max(1, m / pp), g = m / rounds, m % rounds == 0.
#include <algorithm>
#include <deque>
#include <string>

#include "ppstream/schedule/schedule.h"
#include "schedule/args.h"

namespace ppstream {
namespace {

// The k-th forward (backward) of a rank, k counting virtual microbatches 0 .. m*v-1.
ComputeAction virtual_action(int32_t k, bool backward, int32_t r, int32_t pp, int32_t v, int32_t g) {
  const int32_t in_group = k % (g * v);
  int32_t chunk = in_group / g;
  if (backward) chunk = v - 1 - chunk;
  const Microbatch mb{(k / (g * v)) * g + k % g};
  return ComputeAction{backward, mb, Stage{chunk * pp + r}};
}

// The interleaved order (Megatron / PyTorch _get_1f1b_rank_ops). zero_bubble: each backward is
// split (I, then W queued); warm-up hops count 1 instead of 2, and from the r-th backward on
// every I is followed by the oldest queued W (PyTorch ScheduleInterleavedZeroBubble, ZB1P of
// Qi et al. 2024); the rest of the W's end the rank's order.
ComputeOrder interleaved_order(const char* fn, int32_t pp, int32_t vpp, int32_t microbatches, bool zero_bubble) {
  schedule_detail::require_at_least(fn, "pp", pp, 1);
  schedule_detail::require_at_least(fn, "vpp", vpp, 1);
  schedule_detail::require_at_least(fn, "microbatches", microbatches, 1);
  const int32_t rounds = interleaved_rounds(pp, microbatches);
  if (microbatches % rounds != 0)
    throw std::invalid_argument(std::string(fn) + ": microbatches=" + std::to_string(microbatches) +
                                " must be a multiple of its rounds max(1, microbatches / pp)=" + std::to_string(rounds));
  const int32_t g = microbatches / rounds;
  const int32_t total = microbatches * vpp;
  ComputeOrder order(static_cast<size_t>(pp));
  for (int32_t r = 0; r < pp; ++r) {
    auto& actions = order[static_cast<size_t>(r)];
    std::deque<ComputeAction> weights;  // split backward: W's queued behind their I
    auto backward = [&](int32_t k) {
      ComputeAction b = virtual_action(k, true, r, pp, vpp, g);
      if (!zero_bubble) {
        actions.push_back(b);
        return;
      }
      b.part = BackwardPart::INPUT;
      actions.push_back(b);
      b.part = BackwardPart::WEIGHT;
      weights.push_back(b);
      if (k >= r) {
        actions.push_back(weights.front());
        weights.pop_front();
      }
    };
    const int32_t warmup = std::min((pp - r - 1) * (zero_bubble ? 1 : 2) + (vpp - 1) * g, total);
    for (int32_t k = 0; k < warmup; ++k) actions.push_back(virtual_action(k, false, r, pp, vpp, g));
    for (int32_t k = 0; k < total - warmup; ++k) {
      actions.push_back(virtual_action(k + warmup, false, r, pp, vpp, g));
      backward(k);
    }
    for (int32_t k = total - warmup; k < total; ++k) backward(k);
    actions.insert(actions.end(), weights.begin(), weights.end());
  }
  return order;
}

}  // namespace

ComputeOrder schedule_interleaved_1f1b(int32_t pp, int32_t vpp, int32_t microbatches) {
  return interleaved_order("schedule_interleaved_1f1b", pp, vpp, microbatches, false);
}

ComputeOrder schedule_interleaved_zb(int32_t pp, int32_t vpp, int32_t microbatches) {
  return interleaved_order("schedule_interleaved_zb", pp, vpp, microbatches, true);
}

}  // namespace ppstream
