// CommQueueTable: the static shape of a rank's device communication queues under a profile's
// CommQueues (engine/platform.h) — which units exist (a BATCH's ops with one peer, or a whole
// BATCH or collective) and each unit's predecessor and successor on its queue, in program
// (= issue) order. Built per engine run in O(instructions); PER_COMMUNICATOR needs no table
// (the Topology's communicator chains serve it).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/platform.h"
#include "engine/topology.h"

namespace ppstream::engine {

// One unit on a queue: the ops of BATCH `g` with `peer` (PER_GROUP), or all of instruction `g`
// (ONE_PER_RANK: a BATCH or a collective).
struct QueueUnit {
  int32_t g = kNone;      // global instruction id
  int32_t peer = kNone;   // peer rank of a PER_GROUP unit, kNone for a whole instruction
  int32_t ops = 0;        // P2P ops in the unit (0 for a collective)
  int32_t prev = kNone;   // previous unit on the same queue, or kNone
  int32_t next = kNone;
};

struct CommQueueTable {
  CommQueues kind = CommQueues::PER_COMMUNICATOR;
  std::vector<QueueUnit> units;        // a BATCH's units are contiguous, in first-op order
  std::vector<int32_t> unit_of_op;     // per P2P op id; kNone when not queued
  std::vector<int32_t> unit_of_instr;  // per global instruction: its first unit, or kNone
  std::vector<int32_t> unit_of_coll;   // per collective slot (Topology::coll): its unit, or kNone

  bool active() const { return kind != CommQueues::PER_COMMUNICATOR; }
};

CommQueueTable build_comm_queues(const Topology& t, CommQueues kind);

}  // namespace ppstream::engine
