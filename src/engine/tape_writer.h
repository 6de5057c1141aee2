// TapeWriter: what the engine's Runner calls, at each time it assigns, to append that time's
// tape entry (include/ppstream/engine/tape.h). It owns the slot layout: 4 slots per global
// instruction (InstrTiming's fields, in order), then per P2P op its post and its match, per
// communication queue unit its end, per collective slot its two phases' arrivals, per collective
// instance its last arrival, then temporaries. A communicator's "free" time and a collective's
// queue unit end are no slots of their own: they name the slot whose value they took.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "engine/comm_queue.h"
#include "engine/topology.h"
#include "ppstream/engine/tape.h"

namespace ppstream::engine {

enum class Field : int32_t { ISSUE = 0, READY = 1, START = 2, END = 3 };  // InstrTiming's order

class TapeWriter {
 public:
  TapeWriter(const Topology& topo, const CommQueueTable& queues, PlatformKind platform, bool timed);

  int32_t at(int32_t g, Field f) const { return 4 * g + static_cast<int32_t>(f); }
  int32_t posted(int32_t op) const { return posted_base_ + op; }
  int32_t matched(int32_t op) const { return matched_base_ + op; }
  int32_t arrival(int32_t cs, int32_t phase) const { return arrival_base_ + 2 * cs + phase; }
  int32_t done(int32_t inst) const { return done_base_ + inst; }
  // The slot holding queue unit u's end (its own for a BATCH unit; a collective's end for its unit).
  int32_t unit_end(int32_t u) const { return unit_src_[static_cast<size_t>(u)]; }
  int32_t own_unit_end(int32_t u) const { return unit_base_ + u; }
  void set_unit_end(int32_t u, int32_t src) { unit_src_[static_cast<size_t>(u)] = src; }
  // The slot holding the time collective slot cs's phase on communicator `k` finished.
  int32_t comm_free(int32_t cs, GroupKind k) const { return free_src_[2 * static_cast<size_t>(cs) + static_cast<size_t>(k)]; }
  void set_comm_free(int32_t cs, GroupKind k, int32_t src) {
    free_src_[2 * static_cast<size_t>(cs) + static_cast<size_t>(k)] = src;
  }

  // Appends slots[dst] = max(slots[ops]) + cost(p, i); kNone operands are skipped (a stream's
  // first instruction has no predecessor).
  void add(int32_t dst, std::initializer_list<int32_t> ops, TapeCost cost = TapeCost::NONE, int32_t p = 0,
           int32_t i = 0) {
    add(dst, std::span<const int32_t>(ops.begin(), ops.size()), cost, p, i);
  }
  void add(int32_t dst, std::span<const int32_t> ops, TapeCost cost = TapeCost::NONE, int32_t p = 0, int32_t i = 0);
  // A reusable operand buffer for long operand lists (a BATCH's matches, an instance's members).
  std::vector<int32_t>& scratch() {
    scratch_.clear();
    return scratch_;
  }

  // The tape of the run (`set` is the topology's).
  std::shared_ptr<const Tape> finish(const ProgramSet& set);

 private:
  std::shared_ptr<Tape> tape_;
  int32_t posted_base_ = 0, matched_base_ = 0, unit_base_ = 0, arrival_base_ = 0, done_base_ = 0;
  std::vector<int32_t> unit_src_, free_src_, scratch_;
};

}  // namespace ppstream::engine
