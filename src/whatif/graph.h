// The lifted dependency graph of one step of one DP rank (the template), shared by every step and
// DP rank: which ops an op waits for, and which ops communicate together (docs/whatif.md "Lifting").
#pragma once

#include <cstdint>
#include <vector>

#include "job.h"

namespace ppstream::whatif {

// Ops that end together: each member ends at the last member's start (over the DP ranks of the
// step too when dp_sync) plus its own transfer time.
struct CommGroup {
  std::vector<int32_t> members;
  bool dp_sync = false;  // a DP collective: its group spans every DP rank of the stage(s)
};

struct Graph {
  std::vector<std::vector<int32_t>> deps;  // [op] → ops (same row) whose end it starts after
  std::vector<int32_t> group;              // [op] → index in groups, or -1 (ends at start + duration)
  std::vector<CommGroup> groups;
  // Evaluation order: op k as k, group g as -(g + 1); an op comes after what it depends on and a
  // group after all its members.
  std::vector<int32_t> order;
};

// Lifts the template of `job` (rules in docs/whatif.md). Throws LiftError naming DP rank 0,
// stage, step and op for a P2P op without its peer, a missing collective member or a cycle.
Graph lift_graph(const Job& job, std::vector<std::string>& notes);

}  // namespace ppstream::whatif
