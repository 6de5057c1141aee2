// What one replay process needs to know about its rank's program, derived once per policy:
// streams and their instruction lists, event ids, P2P tags, each collective's phases with the
// communicator and program-order position they use (from the engine's Topology, the one group
// formula), and the scaled buffer sizes (docs/replay.md, "Buffers").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/program/ir.h"
#include "ppstream/sim/cost_model.h"
#include "replay/progress.h"

namespace ppstream::replay {

inline constexpr int kShardComm = 0;      // index of the shard-group communicator
inline constexpr int kReplicateComm = 1;  // index of the replicate-group communicator

struct CollPhase {
  CollOp op = CollOp::ALL_REDUCE;
  int comm = kShardComm;
  int64_t seq = 0;
};

struct InstrPlan {
  int32_t stream = 0;
  int32_t event = -1;             // RECORD / WAIT: rank-local event id
  // WAIT: the instruction index of the RECORD it synchronizes with, the most recent RECORD of its
  // event before it in program order (engine::Topology::synced_record, the engine's rule); -1: none.
  int32_t record = -1;
  std::vector<int> tags;          // BATCH: one MPI tag per op
  std::vector<CollPhase> phases;  // UNSHARD / REDUCE_GRAD, in order
};

struct RankPlan {
  size_t prog = 0;                             // index in the set
  std::vector<std::string> streams;            // names, in order of first use
  std::vector<std::vector<int32_t>> stream_instrs;
  std::vector<InstrPlan> instrs;
  int32_t events = 0;
  int32_t group_color[2] = {0, 0};             // shard / replicate group id (MPI_Comm_split color)
  std::vector<int32_t> shard_members;          // ranks of this rank's shard group, in order
  std::vector<int32_t> replicate_members;      // ranks of this rank's replicate group, in order
  std::vector<int32_t> dp_members;             // ranks of this PP rank's whole DP group
  int32_t shard_index = 0;                     // position in the shard group
  int64_t p2p_elems = 1;                       // doubles per P2P op
  std::vector<int64_t> grad_elems, param_elems;  // per virtual stage, multiples of shard
  std::vector<int32_t> stage_layers;             // per virtual stage: layer count (bucket shares)
};

// `max_bytes` caps every buffer (at least 8 * shard bytes are kept so that chunks are non-empty).
RankPlan make_plan(const ProgramSet& set, size_t prog, const PipelineConfig& cfg, const sim::CostSpec& cost,
                   int64_t max_bytes);

}  // namespace ppstream::replay
