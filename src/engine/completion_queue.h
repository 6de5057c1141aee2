// MinHeap4: the engine's pending completions, smallest first — a 4-ary min-heap.
//
// The engine's keys (engine_state.h Completion: time, then stream position, which orders as
// rank, stream, index) are unique (an instruction completes once), so any correct priority
// queue pops them in the same order; this one is std::priority_queue's contract with four
// children per node instead of two: half the levels, and a node's four children adjacent (64
// bytes of 16-byte Completions). The heap holds at most one entry per stream slot (only a
// stream's head runs): up to 81,920 on the seed's 16,384-rank cluster (at most 5 streams a
// rank), beyond the L2 cache, where each level of a sift can be a cache miss (docs/simulate.md
// "Scaling"). pop() is the "bottom-up" sift (descend to a leaf along the smallest children,
// then sift the moved element up): the element taken from the back usually belongs near the
// bottom, so this saves comparisons.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace ppstream::engine {

template <class T>  // T: operator> is a strict weak order (ties never occur in the engine)
class MinHeap4 {
 public:
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  const T& top() const { return v_.front(); }

  void push(const T& x) {
    v_.push_back(x);
    sift_up(v_.size() - 1, x);
  }

  void pop() {
    const T last = v_.back();
    v_.pop_back();
    if (v_.empty()) return;
    // Descend from the root along the smallest child to a leaf, then place `last` on that path.
    size_t hole = 0;
    const size_t n = v_.size();
    for (size_t c = 1; c < n; c = 4 * hole + 1) {
      size_t best = c;
      const size_t end = c + 4 < n ? c + 4 : n;
      for (size_t k = c + 1; k < end; ++k)
        if (v_[best] > v_[k]) best = k;
      v_[hole] = v_[best];
      hole = best;
    }
    sift_up(hole, last);
  }

 private:
  std::vector<T> v_;

  // Moves the element x (to be stored at `hole`) up until its parent is not greater.
  void sift_up(size_t hole, const T& x) {
    while (hole > 0) {
      const size_t parent = (hole - 1) / 4;
      if (!(v_[parent] > x)) break;
      v_[hole] = v_[parent];
      hole = parent;
    }
    v_[hole] = x;
  }
};

}  // namespace ppstream::engine
