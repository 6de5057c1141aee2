// A batched replay of the engine's tape (docs/semantics.md "The tape", "The batched replay"):
// up to kMaxLanes cost vectors evaluated in one pass over the tape, for an evaluator that
// replays the same tape under many cost views (the what-if engine evaluator: every step of an
// evaluation is one lane).
//
// Layout: slot-major, lane-minor. The value of slot s in lane l is buffer[s · lanes + l], a cost
// term t of lane l is chunk[(t - first) · lanes + l], so each tape entry is one loop over
// `lanes` contiguous doubles: per lane the same max() over the same operands in the same order
// and the same one addition as replay_tape, so every lane's makespan is bit-equal to
// replay_tape(tape, lane's fixed, lane's arrival, ...).makespan_ms
// (tests/cpp/engine/tape_batch_test.cpp).
//
// Compaction: a replay for the makespan only needs a slot while a later entry still reads it.
// With `compact` the batch renumbers the tape's slots by liveness (a slot freed after its last
// read is the next written slot), so a batch holds the largest number of values live at once,
// not tape.slots() (on the what-if MID world 79,745 of 358,497 before the copies below), and
// the makespan is the max of each instruction's end as it is written; an operand whose value is
// +0.0 in every replay (an entry of no operand and no term, or a copy of one: a zero entry, not
// replayed) is dropped from its reader's max (max(+0.0, x) is x for the tape's values, finite
// and >= +0.0); an entry then of one operand and no term is a copy, not replayed: its readers
// read its operand's value. Without `compact`
// every entry is replayed into the tape's own slots (slot 4g + 3 is global instruction g's
// end), which the tests read lane by lane.
//
//   const TapeBatch batch(*tape);
//   std::vector<double> buffer, chunk, ms(4);
//   batch.replay(4, source, buffer, chunk, ms.data());  // source: each lane's terms, a chunk at a time
//
// A TapeBatch belongs to its tape's program set (it keeps no pointer to the tape).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "ppstream/engine/tape.h"

namespace ppstream {

class TapeBatch {
 public:
  static constexpr int32_t kMaxLanes = 32;

  // `zero` (optional): the entries whose cost term is 0 under every cost model the batch will
  // replay (a term the caller's models never set); they are replayed without their addition,
  // which is exact: no slot ever holds -0.0 (a replay starts at +0.0 and adds terms >= 0), and
  // t + 0.0 is t for every other t. Their terms are not asked for: the TermSource's numbering
  // counts only the others, fixed and arrival apart, in tape_costs order.
  using ZeroTerm = std::function<bool(const TapeEntry&)>;
  // `chunk_terms`: the most terms one TermSource call asks for (tests make it small).
  static constexpr int64_t kChunkTerms = 2048;
  explicit TapeBatch(const Tape& tape, bool compact = true, const ZeroTerm& zero = {}, int64_t chunk_terms = kChunkTerms);

  int32_t slots() const { return slots_; }  // values per lane a replay holds
  int64_t entries() const { return static_cast<int64_t>(entries_.size()); }  // entries a replay evaluates
  int64_t fixed_terms() const { return fixed_terms_; }
  int64_t arrival_terms() const { return arrival_terms_; }
  size_t bytes() const;  // the batch's own memory (not the replay buffer)

  // The source of a replay's cost terms: writes terms [first, first + count) of the fixed
  // (`arrival` false) or the arrival terms (tape_costs order) of every lane to
  // out[(t - first) · lanes + l]; false when one is not finite or is negative (the replay
  // stops; the engine refuses such a cost, and the folding above needs every value >= +0.0).
  using TermSource = std::function<bool(bool arrival, int64_t first, int64_t count, int32_t lanes, double* out)>;

  // Replays `lanes` (1..kMaxLanes) cost vectors: asks `terms` for them a chunk at a time (at
  // most chunk_terms per call, so a replay holds slots() × lanes values and one chunk of terms,
  // not every term of every lane) and writes each lane's makespan (ms) to makespan[0..lanes).
  // `buffer` and `chunk` are the caller's, reused across replays. Returns false (makespan
  // unset) when `terms` did. Throws std::invalid_argument for a lane count out of range.
  bool replay(int32_t lanes, const TermSource& terms, std::vector<double>& buffer, std::vector<double>& chunk,
              double* makespan) const;
  // The non-compact batch's slots after a replay: lane l's value of tape slot `slot`.
  static double value(const std::vector<double>& buffer, int32_t lanes, int32_t slot, int32_t lane) {
    return buffer[static_cast<size_t>(slot) * static_cast<size_t>(lanes) + static_cast<size_t>(lane)];
  }

 private:
  enum : uint8_t { kNoCost = 0, kFixed = 1, kArrival = 2 };
  struct Entry {
    int32_t dst = 0;
    uint16_t ops = 0;
    uint8_t cost = kNoCost;
    uint8_t end = 0;  // 1: the last write of an instruction's end slot (enters the makespan)
  };
  // Entries [entry, entry_end) with their operands from `operand`, fixed terms from
  // fixed_begin and arrival terms from arrival_begin: at most chunk_terms_ terms together.
  struct Segment {
    int64_t entry = 0, entry_end = 0, operand = 0, fixed_begin = 0, fixed_end = 0, arrival_begin = 0, arrival_end = 0;
  };
  // How many operands ahead run() asks for a slot's cache line (tape_batch.cpp).
  static constexpr size_t kPrefetch = 32;
  template <int W>
  void run(const Segment& seg, const double* fixed, const double* arrival, double* v, double* makespan) const;
  using RunFn = void (TapeBatch::*)(const Segment&, const double*, const double*, double*, double*) const;
  template <size_t... I>
  static constexpr auto runs(std::index_sequence<I...>) -> std::array<RunFn, sizeof...(I)>;
  static const std::array<RunFn, kMaxLanes> kRuns;  // run<1> .. run<kMaxLanes>

  std::vector<Segment> segments_;
  std::vector<Entry> entries_;
  std::vector<int32_t> operands_;
  int32_t slots_ = 0;
  int64_t chunk_terms_ = kChunkTerms;
  int64_t fixed_terms_ = 0, arrival_terms_ = 0;
};

}  // namespace ppstream
