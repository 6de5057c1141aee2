// The unit-time replay of a compute order (model in schedule.h) and the views built on it:
// the rank × slot grid, idle slots and the bubble ratio. One dependency rule, used by all three.
#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>

#include "ppstream/program/deps.h"
#include "ppstream/schedule/schedule.h"

namespace ppstream {
namespace {

using Key = std::tuple<OpKind, int32_t, int32_t>;  // (op, mb, stage): one action
using RoleKey = std::tuple<Role, int32_t, int32_t>;  // (role, mb, stage): what it produces

Key key_of(const ComputeAction& a) { return {op_kind(a), a.mb.v, a.stage.v}; }

// The action of `order` that produces k ("0B1", or "0I1" under the split backward).
std::string name(const ComputeOrder& order, const RoleKey& k) {
  for (const auto& actions : order)
    for (const ComputeAction& a : actions)
      if (has_role(op_kind(a), std::get<0>(k)) && a.mb.v == std::get<1>(k) && a.stage.v == std::get<2>(k))
        return to_string(a);
  const char* op = std::get<0>(k) == Role::FORWARD ? "F" : "B";
  return std::to_string(std::get<1>(k)) + op + std::to_string(std::get<2>(k));
}

int32_t num_stages(const ComputeOrder& order) {
  int32_t max_stage = -1;
  for (const auto& actions : order)
    for (const ComputeAction& a : actions) max_stage = std::max(max_stage, a.stage.v);
  return max_stage + 1;
}

// Dependencies of an action under the unit-time model: the producers program/deps.h names.
std::vector<RoleKey> deps_of(const ComputeAction& a, int32_t stages) {
  std::vector<RoleKey> deps;
  for (const Need& n : needs_of(op_kind(a), a.mb, a.stage, stages)) deps.emplace_back(n.role, n.mb.v, n.stage.v);
  return deps;
}

void check_placement(const ComputeOrder& order, Placement pl) {
  const auto pp = static_cast<int32_t>(order.size());
  std::map<Key, size_t> seen;
  for (size_t r = 0; r < order.size(); ++r) {
    for (size_t i = 0; i < order[r].size(); ++i) {
      const ComputeAction& a = order[r][i];
      std::string where = "order[r" + std::to_string(r) + "][" + std::to_string(i) + "] = " + to_string(a);
      if (a.mb.v < 0 || a.stage.v < 0)
        throw std::invalid_argument("unit-time simulation: " + where + " has a negative microbatch or stage");
      if (pl == Placement::V && a.stage.v >= 2 * pp)
        throw std::invalid_argument("unit-time simulation: " + where + " runs stage " + std::to_string(a.stage.v) +
                                    ", but V placement has 2pp = " + std::to_string(2 * pp) + " stages");
      if (const int32_t home = pp_rank_of_stage(a.stage, pp, pl); home != static_cast<int32_t>(r))
        throw std::invalid_argument("unit-time simulation: " + where + " runs stage " + std::to_string(a.stage.v) +
                                    ", which lives on PP rank " + std::to_string(home) + " (" +
                                    (pl == Placement::V ? "V placement: stages r and 2pp-1-r" : "stage % pp") + ")");
      if (!seen.emplace(key_of(a), r).second)
        throw std::invalid_argument("unit-time simulation: " + where + " appears more than once");
    }
  }
}

}  // namespace

UnitTimeline simulate_unit_time(const ComputeOrder& order, Placement pl) { return simulate_unit_time(order, {}, pl); }

UnitTimeline simulate_unit_time(const ComputeOrder& order, const std::vector<std::vector<bool>>& fuse_next, Placement pl) {
  check_placement(order, pl);
  const int32_t stages = num_stages(order);
  auto fused = [&](size_t r, size_t i) {
    return r < fuse_next.size() && i < fuse_next[r].size() && fuse_next[r][i] && i + 1 < order[r].size();
  };
  UnitTimeline tl;
  tl.slot.resize(order.size());
  std::map<RoleKey, int64_t> finished;  // produced → the last slot of its group (visible after it)
  std::vector<size_t> next(order.size(), 0);
  std::vector<int64_t> free_at(order.size(), 0);  // first slot the rank is free
  // A rank's next group (one action, or two fused ones) can be placed once the dependencies of
  // all its actions are placed; its slots are then final (ranks are sequential and nothing
  // else competes), so sweeping until no rank moves gives the as-early-as-possible timeline.
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t r = 0; r < order.size(); ++r) {
      while (next[r] < order[r].size()) {
        const size_t n = fused(r, next[r]) ? 2 : 1;
        int64_t start = free_at[r];
        bool ready = true;
        for (size_t g = 0; g < n && ready; ++g) {
          for (const RoleKey& d : deps_of(order[r][next[r] + g], stages)) {
            auto it = finished.find(d);
            if (it == finished.end()) {
              ready = false;
              break;
            }
            start = std::max(start, it->second + 1);
          }
        }
        if (!ready) break;
        for (size_t g = 0; g < n; ++g) {
          const ComputeAction& a = order[r][next[r] + g];
          for (Role role : {Role::FORWARD, Role::INPUT_GRAD, Role::WEIGHT_GRAD})
            if (has_role(op_kind(a), role)) finished[RoleKey{role, a.mb.v, a.stage.v}] = start + static_cast<int64_t>(n) - 1;
          tl.slot[r].push_back(start + static_cast<int64_t>(g));
        }
        free_at[r] = start + static_cast<int64_t>(n);
        tl.makespan = std::max(tl.makespan, free_at[r]);
        next[r] += n;
        progress = true;
      }
    }
  }
  std::string blocked;
  for (size_t r = 0; r < order.size(); ++r) {
    if (next[r] == order[r].size()) continue;
    const ComputeAction& a = order[r][next[r]];
    blocked += "; r" + std::to_string(r) + " at " + to_string(a) + " waits for";
    for (const RoleKey& d : deps_of(a, stages))
      if (!finished.count(d)) blocked += " " + name(order, d);
  }
  if (!blocked.empty())
    throw std::invalid_argument("unit-time simulation: the order cannot complete" + blocked);
  return tl;
}

std::vector<int64_t> idle_slots(const ComputeOrder& order, Placement pl) {
  const UnitTimeline tl = simulate_unit_time(order, pl);
  std::vector<int64_t> idle;
  for (const auto& actions : order) idle.push_back(tl.makespan - static_cast<int64_t>(actions.size()));
  return idle;
}

double bubble_ratio_unit(const ComputeOrder& order, int32_t vpp, Placement pl) {
  const auto pp = static_cast<int32_t>(order.size());
  const int32_t stages = num_stages(order);
  if (vpp < 1 || stages != pp * vpp)
    throw std::invalid_argument("bubble_ratio_unit: vpp=" + std::to_string(vpp) + " but the order has " +
                                std::to_string(stages) + " stages on " + std::to_string(pp) +
                                " ranks (expected pp*vpp stages)");
  const std::vector<int64_t> idle = idle_slots(order, pl);
  int64_t busy = 0;
  for (const auto& actions : order) busy += static_cast<int64_t>(actions.size());
  if (busy == 0) throw std::invalid_argument("bubble_ratio_unit: the order has no actions");
  const int64_t total_idle = std::accumulate(idle.begin(), idle.end(), int64_t{0});
  return static_cast<double>(total_idle) / static_cast<double>(busy);
}

std::string format_grid(const ComputeOrder& order, Placement pl) {
  const UnitTimeline tl = simulate_unit_time(order, pl);
  const auto slots = static_cast<size_t>(tl.makespan);
  std::vector<std::vector<std::string>> cells(order.size(), std::vector<std::string>(slots, "."));
  size_t width = std::to_string(slots == 0 ? 0 : slots - 1).size();
  for (size_t r = 0; r < order.size(); ++r)
    for (size_t i = 0; i < order[r].size(); ++i) {
      std::string& c = cells[r][static_cast<size_t>(tl.slot[r][i])];
      c = to_string(order[r][i]);
      width = std::max(width, c.size());
    }
  const size_t label = ("r" + std::to_string(order.empty() ? 0 : order.size() - 1)).size();
  auto row = [&](const std::string& head, const std::vector<std::string>& cols) {
    std::string line = head + std::string(label - head.size(), ' ');
    for (const std::string& c : cols) line += " " + c + std::string(width - c.size(), ' ');
    line.erase(line.find_last_not_of(' ') + 1);
    return line + "\n";
  };
  std::vector<std::string> header;
  for (size_t t = 0; t < slots; ++t) header.push_back(std::to_string(t));
  std::string out = row("", header);
  for (size_t r = 0; r < order.size(); ++r) out += row("r" + std::to_string(r), cells[r]);
  return out;
}

}  // namespace ppstream
