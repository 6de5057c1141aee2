// MinHeap4 (src/engine/completion_queue.h) pops the engine's completions in the order
// std::priority_queue with std::greater does: unique keys, random pushes interleaved with pops,
// heaps of every small size (the sift's edge cases) and one large enough for several levels.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <random>
#include <vector>

#include "engine/completion_queue.h"
#include "engine/engine_state.h"

namespace ppstream::engine {
namespace {

// Pushes `n` random completions with unique stream positions (shuffled) and times drawn from
// few values (ties on t, as when replicas finish together), popping now and then; returns the pops.
template <class Queue>
std::vector<Completion> run(Queue& q, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Completion> out;
  std::vector<int32_t> pos(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) pos[static_cast<size_t>(k)] = k;
  std::shuffle(pos.begin(), pos.end(), rng);
  auto pop = [&] {
    out.push_back(q.top());
    q.pop();
  };
  for (int k = 0; k < n; ++k) {
    const double t = static_cast<double>(rng() % 7);
    q.push({t, pos[static_cast<size_t>(k)], k});
    if (rng() % 3 == 0) pop();
  }
  while (!q.empty()) pop();
  return out;
}

TEST(CompletionQueue, PopsInPriorityQueueOrder) {
  for (int n : {0, 1, 2, 3, 4, 5, 6, 17, 21, 64, 1000}) {
    for (uint32_t seed = 1; seed <= 5; ++seed) {
      MinHeap4<Completion> mine;
      std::priority_queue<Completion, std::vector<Completion>, std::greater<Completion>> ref;
      const std::vector<Completion> a = run(mine, n, seed), b = run(ref, n, seed);
      ASSERT_EQ(a.size(), b.size());
      for (size_t k = 0; k < a.size(); ++k) {
        ASSERT_EQ(a[k].t, b[k].t) << "n=" << n << " seed=" << seed << " pop " << k;
        ASSERT_EQ(a[k].pos, b[k].pos) << "n=" << n << " seed=" << seed << " pop " << k;
      }
    }
  }
}

}  // namespace
}  // namespace ppstream::engine
