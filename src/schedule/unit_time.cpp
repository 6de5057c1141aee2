// Unit-time execution of a compute order (see unit_time.h): a fixed-point sweep over ranks.
#include "ppstream/schedule/unit_time.h"

#include <map>
#include <stdexcept>
#include <string>

namespace ppstream {

UnitTimes run_unit_time(const ComputeOrder& order, int32_t pp, int32_t num_stages, int64_t f_slots,
                        int64_t b_slots) {
  UnitTimes t;
  const size_t ranks = order.size();
  t.start.resize(ranks);
  t.finish.resize(ranks);
  for (size_t r = 0; r < ranks; ++r) {
    t.start[r].assign(order[r].size(), -1);
    t.finish[r].assign(order[r].size(), -1);
  }
  // finish time per (backward?, mb, stage), filled as actions run.
  std::map<std::tuple<bool, int32_t, int32_t>, int64_t> done;
  std::vector<size_t> next(ranks, 0);
  std::vector<int64_t> free_at(ranks, 0);
  size_t remaining = 0;
  for (const auto& o : order) remaining += o.size();
  while (remaining > 0) {
    bool progressed = false;
    for (size_t r = 0; r < ranks; ++r) {
      while (next[r] < order[r].size()) {
        const ComputeAction& a = order[r][next[r]];
        int64_t ready = free_at[r];
        auto need = [&](bool bwd, int32_t stage) -> bool {
          auto it = done.find({bwd, a.mb.v, stage});
          if (it == done.end()) return false;
          ready = std::max(ready, it->second);
          return true;
        };
        bool ok = true;
        if (!a.backward && a.stage.v > 0) ok = need(false, a.stage.v - 1);
        if (a.backward) {
          ok = need(false, a.stage.v);
          if (ok && a.stage.v + 1 < num_stages) ok = need(true, a.stage.v + 1);
        }
        if (!ok) break;
        const int64_t end = ready + (a.backward ? b_slots : f_slots);
        t.start[r][next[r]] = ready;
        t.finish[r][next[r]] = end;
        free_at[r] = end;
        done[{a.backward, a.mb.v, a.stage.v}] = end;
        t.makespan = std::max(t.makespan, end);
        ++next[r];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) {
      std::string stuck;
      for (size_t r = 0; r < ranks; ++r)
        if (next[r] < order[r].size())
          stuck += " rank " + std::to_string(r) + " at " + to_string(order[r][next[r]]) + ";";
      throw std::invalid_argument("schedule: compute order cannot complete (pp=" + std::to_string(pp) +
                                  "), stuck:" + stuck);
    }
  }
  return t;
}

}  // namespace ppstream
