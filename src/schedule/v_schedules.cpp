// The V schedules: rank r holds stages r (chunk 0) and 2pp-1-r (chunk 1), ir.h Placement::V.
// ZBV (Qi et al., "Pipeline Parallelism with Controllable Memory", 2024 / "Zero Bubble Pipeline
// Parallelism" §6; PyTorch ScheduleZBVZeroBubble) and DualPipeV (DeepSeek-V3 report §3.2.1,
// github.com/deepseek-ai/DualPipe; PyTorch ScheduleDualPipeV). Both transcribe PyTorch's
// _calculate_single_rank_operations phase by phase; tests/cpp/schedule/torch_orders_test.cpp
// compares them with torch's own orders.
#include <algorithm>
#include <deque>
#include <map>
#include <utility>

#include "ppstream/schedule/schedule.h"
#include "schedule/args.h"

namespace ppstream {
namespace {

ComputeAction act(int32_t stage, int32_t mb, bool backward, BackwardPart part = BackwardPart::FULL) {
  return ComputeAction{backward, Microbatch{mb}, Stage{stage}, part};
}

std::vector<ComputeAction> zbv_rank(int32_t pp, int32_t microbatches, int32_t r) {
  // Built for n = max(2pp-1, m) microbatches, then the actions of microbatches >= m dropped
  // (PyTorch does the same, so small m keeps the shape of the full schedule).
  const int32_t n = std::max(2 * pp - 1, microbatches);
  const int32_t s0 = r, s1 = 2 * pp - 1 - r;
  std::vector<ComputeAction> ops;
  int32_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
  auto f = [&](int32_t s, int32_t& cnt) { ops.push_back(act(s, cnt++, false)); };
  auto i = [&](int32_t s, int32_t mb) { ops.push_back(act(s, mb, true, BackwardPart::INPUT)); };
  auto w = [&](int32_t s, int32_t mb) { ops.push_back(act(s, mb, true, BackwardPart::WEIGHT)); };
  for (int32_t k = 0; k < 2 * (pp - r) - 1; ++k) f(s0, f0);  // warm-up: chunk 0 fills the V
  for (int32_t k = 0; k < r; ++k) {
    f(s1, f1);
    f(s0, f0);
  }
  for (int32_t k = 0; k < pp - r; ++k) {
    f(s1, f1);
    i(s1, b1);
    w(s1, b1++);
  }
  while (f1 < f0 || f0 < n) {  // steady: F I W on chunk 0, then on chunk 1
    if (f0 < n) f(s0, f0);
    i(s0, b0);
    w(s0, b0++);
    f(s1, f1);
    i(s1, b1);
    w(s1, b1++);
  }
  int32_t w0 = b0, w1 = b1;  // cool-down: I's first, the W's they leave behind at the end
  for (int32_t k = 0; k < r; ++k) {
    i(s0, b0++);
    i(s1, b1++);
  }
  for (int32_t k = 0; k < pp - r; ++k) {
    i(s0, b0++);
    w(s0, w0++);
  }
  while (w1 < b1) w(s1, w1++);
  while (w0 < b0) w(s0, w0++);
  std::erase_if(ops, [&](const ComputeAction& a) { return a.mb.v >= microbatches; });
  return ops;
}

// DualPipeV: PyTorch's counters per (stage, F) and (stage, I); a full backward B advances the
// I and W counters; an I queues its W, which runs where the schedule takes one from the queue.
// OVERLAP_F_B (torch runs its sub-actions in order unless a custom overlap function is
// registered) becomes its F followed by its B.
class DualPipeVRank {
 public:
  DualPipeVRank(int32_t pp, int32_t r) : s0_(r), s1_(2 * pp - 1 - r) {}
  std::vector<ComputeAction> build(int32_t pp, int32_t m, int32_t r) {
    for (int32_t k = 0; k < (pp - r - 1) * 2; ++k) forward(s0_);
    for (int32_t k = 0; k < r + 1; ++k) {
      forward(s0_);
      forward(s1_);
    }
    for (int32_t k = 0; k < pp - r - 1; ++k) {
      input(s1_);
      weight_if_pending();
      forward(s1_);
    }
    for (int32_t k = 0; k < m - 2 * pp + r + 1; ++k) {
      if (k == 0 && r == pp - 1) {
        forward(s0_);
        full(s1_);
      } else {
        overlap(s0_, s1_);
      }
      overlap(s1_, s0_);
    }
    for (int32_t k = 0; k < pp - r - 1; ++k) {
      full(s1_);
      overlap(s1_, s0_);
    }
    bool zb = false;  // the last rank+1 backward pairs switch to I (+ deferred W) half-way
    const int32_t step6 = r + 1;
    for (int32_t k = 0; k < step6; ++k) {
      if (k == step6 / 2 && r % 2 == 1) zb = true;
      backward(s1_, zb);
      if (k == step6 / 2 && r % 2 == 0) zb = true;
      backward(s0_, zb);
    }
    for (int32_t k = 0; k < pp - r - 1; ++k) {
      weight_if_pending();
      backward(s0_, zb);
    }
    for (int32_t k = 0; k < r + 1; ++k) weight_if_pending();
    return std::move(ops_);
  }

 private:
  int32_t& count(int32_t s, bool fwd) { return counters_[{s, fwd}]; }
  void forward(int32_t s) { ops_.push_back(act(s, count(s, true)++, false)); }
  void full(int32_t s) { ops_.push_back(act(s, count(s, false)++, true)); }
  void input(int32_t s) {
    const int32_t mb = count(s, false)++;
    ops_.push_back(act(s, mb, true, BackwardPart::INPUT));
    weights_.emplace_back(s, mb);
  }
  void backward(int32_t s, bool split) { split ? input(s) : full(s); }
  void overlap(int32_t fwd_stage, int32_t bwd_stage) {
    forward(fwd_stage);
    full(bwd_stage);
  }
  void weight_if_pending() {
    if (weights_.empty()) return;
    ops_.push_back(act(weights_.front().first, weights_.front().second, true, BackwardPart::WEIGHT));
    weights_.pop_front();
  }
  int32_t s0_, s1_;
  std::map<std::pair<int32_t, bool>, int32_t> counters_;  // (stage, forward?) → next microbatch
  std::deque<std::pair<int32_t, int32_t>> weights_;       // (stage, mb) of I's whose W is pending
  std::vector<ComputeAction> ops_;
};

}  // namespace

ComputeOrder schedule_zbv(int32_t pp, int32_t microbatches) {
  schedule_detail::require_at_least("schedule_zbv", "pp", pp, 1);
  schedule_detail::require_at_least("schedule_zbv", "microbatches", microbatches, 1);
  ComputeOrder order(static_cast<size_t>(pp));
  for (int32_t r = 0; r < pp; ++r) order[static_cast<size_t>(r)] = zbv_rank(pp, microbatches, r);
  return order;
}

ComputeOrder schedule_dualpipev(int32_t pp, int32_t microbatches) {
  schedule_detail::require_at_least("schedule_dualpipev", "pp", pp, 1);
  schedule_detail::require_at_least("schedule_dualpipev", "microbatches", microbatches, 2 * pp);
  ComputeOrder order(static_cast<size_t>(pp));
  for (int32_t r = 0; r < pp; ++r) order[static_cast<size_t>(r)] = DualPipeVRank(pp, r).build(pp, microbatches, r);
  return order;
}

}  // namespace ppstream
