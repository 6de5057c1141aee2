// The unit-time replay of a compute order (model in schedule.h) and the views built on it:
// the rank × slot grid, idle slots and the bubble ratio. One dependency rule, used by all three.
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ppstream/program/deps.h"
#include "ppstream/schedule/schedule.h"

namespace ppstream {
namespace {

using RoleKey = std::tuple<Role, int32_t, int32_t>;  // (role, mb, stage): what it produces

// A table over (kind, mb, stage) → int64 (kind in [0, kinds), mb and stage >= 0), -1 for
// absent: a dense array when the order's microbatches and stages are compact (every schedule's
// are), else a hash map (a hand-written order may name any microbatch).
class KeyTable {
 public:
  KeyTable(const ComputeOrder& order, int32_t kinds, int32_t stages) : stages_(stages) {
    int64_t max_mb = -1, actions = 0;
    for (const auto& rank : order)
      for (const ComputeAction& a : rank) max_mb = std::max<int64_t>(max_mb, a.mb.v), ++actions;
    const double cells = static_cast<double>(kinds) * static_cast<double>(max_mb + 1) * std::max(stages, 0);
    if (cells <= 8.0 * static_cast<double>(actions) + 1024.0) {  // in double: no overflow for any int32 sizes
      mbs_ = max_mb + 1;
      dense_.assign(static_cast<size_t>(cells), -1);
    }
  }
  int64_t get(int32_t kind, int32_t mb, int32_t stage) const {
    if (mbs_ >= 0) {
      if (mb < 0 || mb >= mbs_ || stage < 0 || stage >= stages_) return -1;
      return dense_[index(kind, mb, stage)];
    }
    auto it = sparse_.find(hash_key(kind, mb, stage));
    return it == sparse_.end() ? -1 : it->second;
  }
  void set(int32_t kind, int32_t mb, int32_t stage, int64_t v) {
    if (mbs_ >= 0)
      dense_[index(kind, mb, stage)] = v;
    else
      sparse_[hash_key(kind, mb, stage)] = v;
  }

 private:
  int32_t stages_;
  int64_t mbs_ = -1;  // >= 0: dense
  std::vector<int64_t> dense_;
  std::unordered_map<uint64_t, int64_t> sparse_;

  size_t index(int32_t kind, int32_t mb, int32_t stage) const {
    return static_cast<size_t>((static_cast<int64_t>(kind) * mbs_ + mb) * stages_ + stage);
  }
  uint64_t hash_key(int32_t kind, int32_t mb, int32_t stage) const {
    return (static_cast<uint64_t>(kind) << 62) | (static_cast<uint64_t>(static_cast<uint32_t>(mb)) << 31) |
           static_cast<uint32_t>(stage);
  }
};

// Kind indices of the tables: an action's op (F, B, I, W), a produced role.
int32_t op_index(OpKind k) { return k == OpKind::F ? 0 : k == OpKind::B ? 1 : k == OpKind::I ? 2 : 3; }
int32_t role_index(Role r) { return r == Role::FORWARD ? 0 : r == Role::INPUT_GRAD ? 1 : 2; }

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
Needs deps_of(const ComputeAction& a, int32_t stages) { return needs_of(op_kind(a), a.mb, a.stage, stages); }
RoleKey key_of(const Need& n) { return {n.role, n.mb.v, n.stage.v}; }

void check_placement(const ComputeOrder& order, Placement pl) {
  const auto pp = static_cast<int32_t>(order.size());
  int32_t stages = 0;
  for (const auto& actions : order)
    for (const ComputeAction& a : actions) stages = std::max(stages, a.stage.v + 1);
  KeyTable seen(order, 4, stages);
  for (size_t r = 0; r < order.size(); ++r) {
    for (size_t i = 0; i < order[r].size(); ++i) {
      const ComputeAction& a = order[r][i];
      auto where = [&] { return "order[r" + std::to_string(r) + "][" + std::to_string(i) + "] = " + to_string(a); };
      if (a.mb.v < 0 || a.stage.v < 0)
        throw std::invalid_argument("unit-time simulation: " + where() + " has a negative microbatch or stage");
      if (pl == Placement::V && a.stage.v >= 2 * pp)
        throw std::invalid_argument("unit-time simulation: " + where() + " runs stage " + std::to_string(a.stage.v) +
                                    ", but V placement has 2pp = " + std::to_string(2 * pp) + " stages");
      if (const int32_t home = pp_rank_of_stage(a.stage, pp, pl); home != static_cast<int32_t>(r))
        throw std::invalid_argument("unit-time simulation: " + where() + " runs stage " + std::to_string(a.stage.v) +
                                    ", which lives on PP rank " + std::to_string(home) + " (" +
                                    (pl == Placement::V ? "V placement: stages r and 2pp-1-r" : "stage % pp") + ")");
      if (seen.get(op_index(op_kind(a)), a.mb.v, a.stage.v) >= 0)
        throw std::invalid_argument("unit-time simulation: " + where() + " appears more than once");
      seen.set(op_index(op_kind(a)), a.mb.v, a.stage.v, static_cast<int64_t>(r));
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
  KeyTable finished(order, 3, stages);  // produced (role, mb, stage) → the last slot of its group (visible after it)
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
          for (const Need& d : deps_of(order[r][next[r] + g], stages)) {
            const int64_t done = finished.get(role_index(d.role), d.mb.v, d.stage.v);
            if (done < 0) {
              ready = false;
              break;
            }
            start = std::max(start, done + 1);
          }
        }
        if (!ready) break;
        for (size_t g = 0; g < n; ++g) {
          const ComputeAction& a = order[r][next[r] + g];
          for (Role role : {Role::FORWARD, Role::INPUT_GRAD, Role::WEIGHT_GRAD})
            if (has_role(op_kind(a), role)) finished.set(role_index(role), a.mb.v, a.stage.v, start + static_cast<int64_t>(n) - 1);
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
    for (const Need& d : deps_of(a, stages))
      if (finished.get(role_index(d.role), d.mb.v, d.stage.v) < 0) (blocked += ' ') += name(order, key_of(d));  // not " " + …: GCC 12 -Wrestrict (bug 105329)
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
  const size_t label = 1 + std::to_string(order.empty() ? 0 : order.size() - 1).size();  // "rN"
  auto row = [&](const std::string& head, const std::vector<std::string>& cols) {
    std::string line = head + std::string(label - head.size(), ' ');
    for (const std::string& c : cols) line += " " + c + std::string(width - c.size(), ' ');
    line.erase(line.find_last_not_of(' ') + 1);
    return line + "\n";
  };
  std::vector<std::string> header;
  for (size_t t = 0; t < slots; ++t) header.push_back(std::to_string(t));
  std::string out = row("", header);
  for (size_t r = 0; r < order.size(); ++r) out += row(std::string("r").append(std::to_string(r)), cells[r]);  // GCC 12 -Wrestrict on "r" + string&&
  return out;
}

}  // namespace ppstream
