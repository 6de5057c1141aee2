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

// Where the gradient reductions (grads-reduce-scatter) go (docs/whatif.md "Counterfactual"):
// AS_TRACED: the trace's own placement (after the chunk's last backward when the job overlaps its
// reduction, else in the chain after the embedding all-reduce); INLINE: right after the chunk's last
// backward, blocking the compute that follows; ASYNC: after the chunk's last backward and the
// backward send carrying it, on the DP lane, with one drain (every reduction) before clip.
enum class Placement : uint8_t { AS_TRACED, INLINE, ASYNC };

// Lifts the template of `job` (rules in docs/whatif.md). Throws LiftError naming DP rank 0,
// stage, step and op for a P2P op without its peer, a missing collective member or a cycle.
Graph lift_graph(const Job& job, std::vector<std::string>& notes, Placement placement = Placement::AS_TRACED);

}  // namespace ppstream::whatif
