// EngineState: the mutable state of one engine run (host cursors, stream heads,
// P2P posts/matches, collective arrivals) over a fixed Topology. Shared by the event
// loop (engine.cpp) and the deadlock diagnosis (deadlock.cpp).
#pragma once

#include <cstdint>
#include <array>
#include <optional>
#include <vector>

#include "engine/comm_queue.h"
#include "engine/completion_queue.h"
#include "engine/platform.h"
#include "engine/topology.h"
#include "ppstream/engine/engine.h"
#include "ppstream/engine/tape.h"

namespace ppstream::engine {

// A pending completion, 16 bytes (a cluster run's heap holds tens of thousands). Ordered by
// (time, rank, stream name, instruction index): programs are sorted by rank, stream ids follow
// name order and each stream lists its instructions in index order, so a position in
// Topology::stream_list (slot-major: program, then stream) orders as (prog, stream, index). An
// instruction is the head of its stream when its completion is scheduled, so `pos` is that
// head position; `slot` is its stream slot (EngineState::prog_of_slot gives the program).
struct Completion {
  double t = 0.0;
  int32_t pos = 0;   // into Topology::stream_list
  int32_t slot = 0;  // stream slot
  bool operator>(const Completion& o) const {
    if (t != o.t) return t > o.t;
    return pos > o.pos;
  }
};

// The per-op time tables (posted, matched) are hot and large: "not yet" there is kNotYet
// asked through happened() (engine.h, as in InstrTiming). The rarer per-collective and per-unit
// states are std::optional.

struct EngineState {
  const ProgramSet& set;
  const Topology& topo;
  const Platform& platform;
  const CostModel* cost;  // nullptr: zero durations (untimed platform or no model)
  EngineResult& res;

  std::vector<int32_t> host_next;        // per program: next instruction to issue
  std::vector<int32_t> host_blocked_on;  // per program: instruction the host waits on, or kNone
  std::vector<int32_t> head;             // per stream slot: position in topo.stream_list
  std::vector<int32_t> prog_of_slot;     // per stream slot: its program
  // Per stream slot: the WAIT at its head that waits for its RECORD to complete, or kNone. A
  // RECORD's completion looks here (a few contiguous ints per rank) rather than at every
  // stream's head instruction (a cache miss per stream on a large set).
  std::vector<int32_t> parked_wait;
  std::vector<double> posted;            // per op: post time, or kNotYet
  std::vector<double> matched;           // per op: match time, or kNotYet
  std::vector<int32_t> batch_left;       // indexed by a BATCH's first op id: unmatched ops
  std::vector<double> batch_last;        // indexed by a BATCH's first op id: latest match
  std::vector<int32_t> inst_arrived;     // per collective instance: members arrived
  std::vector<double> inst_time;         // per collective instance: latest arrival
  std::vector<char> inst_done;           // per collective instance: completed
  // Communicator order (per collective slot): the phase the collective is at; the time it has
  // been ready to begin that phase while an earlier collective of the rank still holds one of
  // its communicators (nullopt: not held back); per communicator, when its phase there finished.
  std::vector<uint8_t> coll_phase;
  std::vector<std::optional<double>> comm_held_since;
  std::vector<PerGroup<std::optional<double>>> comm_free;
  // Communication queues (engine/comm_queue.h; inactive under PER_COMMUNICATOR): per unit,
  // when it finished, when it was ready but held behind its predecessor (nullopt: not held), its
  // unmatched ops and its latest match.
  CommQueueTable queues;
  std::vector<std::optional<double>> unit_end;
  std::vector<std::optional<double>> unit_held_since;
  std::vector<int32_t> unit_left;
  std::vector<double> unit_last;
  MinHeap4<Completion> queue;  // pending completions, smallest key first
  std::vector<std::pair<int32_t, double>> post_work;  // ops to post (avoids deep recursion)

  EngineState(const ProgramSet& s, const Topology& t, const Platform& p, const CostModel* c, EngineResult& r);

  InstrTiming& timing(int32_t prog, int32_t index) { return res.timing[prog][index]; }
  const InstrTiming& timing(int32_t prog, int32_t index) const { return res.timing[prog][index]; }
  int32_t stream_slot(int32_t prog, int32_t index) const {
    return topo.stream_base[prog] + topo.stream_of[topo.global(prog, index)];
  }
  // Instruction index at the head of a stream slot, or kNone when the stream is drained.
  int32_t head_instr(int32_t slot) const {
    return head[slot] < topo.stream_list_base[slot + 1] ? topo.stream_list[head[slot]] : kNone;
  }
  // Has the member `g` of instance `inst` arrived there (started, earlier phases complete, not
  // held back by communicator order)?
  bool arrived_at(int32_t g, int32_t inst) const;
  // The communicators phase `phase` of collective slot `cs` runs on (mask of comm_bit).
  uint8_t phase_comms(int32_t cs, uint8_t phase) const;
  // The earlier collective or BATCH (global id) that holds back slot `cs` at its current phase
  // (communicator order, or the rank's one communication queue), or kNone.
  int32_t comm_blocker(int32_t cs) const;
  // The unit before `u` on its queue while it has not finished, else kNone.
  int32_t unit_blocker(int32_t u) const {
    const int32_t prev = queues.units[static_cast<size_t>(u)].prev;
    return prev != kNone && !unit_end[static_cast<size_t>(prev)] ? prev : kNone;
  }
};

// Runs the engine on a topology already built (and free of errors) for `set`; lets the
// verifier share one topology between its static rules and its deadlock runs. With `tape`, also
// records the run's tape there (nullptr when the run did not complete; ppstream/engine/tape.h).
EngineResult run_on_topology(const ProgramSet& set, const Topology& topo, const EngineOptions& opts,
                             std::shared_ptr<const Tape>* tape = nullptr);

// Throws std::invalid_argument naming the first of topo.errors (what run_checked refuses).
void check_structure(const Topology& topo);

// Fills res.blocked, res.cycle and res.cycle_blocked after the queue ran dry with work left.
void diagnose_deadlock(const EngineState& st);

}  // namespace ppstream::engine
