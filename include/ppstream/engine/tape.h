// The engine's tape: the arithmetic of one engine run, recorded so that another cost model's run
// of the same program set is one linear pass (docs/semantics.md "The tape").
//
// Every time the engine assigns (an instruction's issue, ready, start and end; a P2P op's post
// and match; a collective member's arrival and an instance's last arrival; a communication
// queue unit's end) is max(earlier times) + one cost-model term (or none), and *which* earlier
// times enter is fixed by program order and the static matching (streams FIFO, P2P channels by
// position, collectives by k-th occurrence per group, communicator chains and communication
// queues in program order), not by the values. The engine writes one tape entry per such time at
// the point where the semantics defines it (a WAIT found already recorded and a parked one give
// the same entry), in the order it computed them, which is a topological order. replay_tape
// evaluates the entries in that order with another cost model: the same additions on the same
// operands, and max() is exact, so every InstrTiming field is bit-equal to a fresh run_engine
// with that model (tests/cpp/engine/tape_test.cpp).
//
//   EngineResult first;
//   std::shared_ptr<const Tape> tape = record_tape(topo, {PlatformKind::ASCEND_MINDSPORE, &model0}, first);
//   if (tape) EngineResult again = replay_tape(*tape, &model1);  // == run_checked(topo, {.., &model1})
//
// Validity: a tape belongs to one Topology (the ProgramSet it points at must outlive it and stay
// unchanged) and one platform; it exists only for a run that completed (a deadlock's structure
// is the engine's to diagnose). Cost models may differ in every value, not in the set.
// Size: about 4 entries (16 bytes) and 6 operands (4 bytes) per instruction, plus 2 operands per
// P2P op and one per collective member; a replay holds one double per tape slot (4 per
// instruction, 2 per P2P op, 2 per collective phase, 1 per instance and queue unit).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ppstream/engine/engine.h"

namespace ppstream {

namespace engine {
struct Topology;
class TapeWriter;
}  // namespace engine

// Which CostModel call a tape entry adds after its max (for its entry's instruction).
// ARRIVAL_OR_EXTERNAL is max(arrival_delay_ms, external_arrival_ms): a local collective of a
// one-replica set.
enum class TapeCost : uint8_t {
  NONE,
  HOST_ISSUE,
  LAUNCH_DELAY,
  COMPUTE,
  BATCH,
  COLLECTIVE,
  ARRIVAL,
  ARRIVAL_OR_EXTERNAL,
};

// One assignment: slots[dst] = max(slots[operands...]) (0.0 when it has none) + cost term.
// Operands are the next `ops` entries of Tape::operands.
struct TapeEntry {
  int32_t dst = 0;
  int32_t prog = 0;   // the cost term's instruction: program index and instruction index
  int32_t index = 0;
  uint16_t ops = 0;
  TapeCost cost = TapeCost::NONE;
};

class Tape {
 public:
  const ProgramSet& set() const { return *set_; }
  PlatformKind platform() const { return platform_; }
  bool timed() const { return timed_; }                // false: the platform ignores costs
  const std::vector<TapeEntry>& entries() const { return entries_; }
  const std::vector<int32_t>& operands() const { return operands_; }
  int32_t slots() const { return slots_; }             // values a replay holds
  int64_t instructions() const { return static_cast<int64_t>(instr_base_.back()); }
  size_t bytes() const;                                // the tape's own memory

 private:
  friend class engine::TapeWriter;
  friend EngineResult replay_tape(const Tape& tape, const std::vector<double>& fixed, const std::vector<double>& arrival,
                                  std::vector<double>& slots, bool timing);
  const ProgramSet* set_ = nullptr;
  PlatformKind platform_ = PlatformKind::STRICT;
  bool timed_ = false;
  std::vector<TapeEntry> entries_;
  std::vector<int32_t> operands_;
  std::vector<int32_t> instr_base_;  // per program (+1): first global instruction; slot 4g+field
  int32_t slots_ = 0;
};

// Runs the engine as engine::run_checked(topo, opts) does (same result in `result`, same errors
// thrown) and records its tape; nullptr when the run did not complete (deadlock).
std::shared_ptr<const Tape> record_tape(const engine::Topology& topo, const EngineOptions& opts, EngineResult& result);

// A tape's cost terms under one cost model, in entry order: `arrival` the ARRIVAL and
// ARRIVAL_OR_EXTERNAL terms (what another straggler draw changes), `fixed` every other term.
struct TapeCosts {
  std::vector<double> fixed;
  std::vector<double> arrival;
};
// Asks `cost` (nullptr, or an untimed tape: zeros) for every term of the tape. Throws as
// replay_tape does.
TapeCosts tape_costs(const Tape& tape, const CostModel* cost);
// Only the arrival terms, into `arrival` (a draw of the same model's straggler,
// SimCostModel::with_straggler, changes no other term).
void arrival_costs(const Tape& tape, const CostModel* cost, std::vector<double>& arrival);

// The replay with terms already asked (`fixed` and `arrival` as in TapeCosts): bit-equal to
// replay_tape(tape, model) for the model they came from. `slots` is a buffer the caller may
// reuse across replays (grown to tape.slots()). With `timing` false EngineResult::timing stays
// empty (makespan_ms, completed and events_processed are filled): a trial's step time only.
EngineResult replay_tape(const Tape& tape, const std::vector<double>& fixed, const std::vector<double>& arrival,
                         std::vector<double>& slots, bool timing = true);

// The run of the tape's set and platform under `cost` (nullptr: zero cost), bit-equal to
// engine::run_checked(topo, {tape.platform(), cost}): completed, every timing, makespan_ms,
// events_processed. Throws std::invalid_argument, as the engine does, for a cost value that is
// negative or not finite (naming rank, index and instruction; when several are, possibly
// another one than the engine, which names the first in its event order).
EngineResult replay_tape(const Tape& tape, const CostModel* cost);

}  // namespace ppstream
