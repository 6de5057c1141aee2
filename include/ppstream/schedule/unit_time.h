// Unit-time execution of a compute order: every rank runs its actions in order, each action
// starts when its rank is free and its pipeline dependencies are done (F(mb,s) after F(mb,s-1);
// B(mb,s) after B(mb,s+1) and F(mb,s)); P2P is free. The one dependency model of compute
// actions: the grid view, bubble figures and the lowering's P2P ordering all use it.
#pragma once

#include <cstdint>
#include <vector>

#include "ppstream/schedule/schedule.h"

namespace ppstream {

struct UnitTimes {
  // [pp_rank][action index] start and finish slot, F taking `f_slots`, B taking `b_slots`.
  std::vector<std::vector<int64_t>> start, finish;
  int64_t makespan = 0;
};

// Throws std::invalid_argument naming the stuck action if the order cannot complete (a
// dependency that never runs, or a cycle between ranks).
UnitTimes run_unit_time(const ComputeOrder& order, int32_t pp, int32_t num_stages, int64_t f_slots = 1,
                        int64_t b_slots = 1);

}  // namespace ppstream
