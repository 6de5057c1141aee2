// The batched tape replay (ppstream/engine/tape_batch.h): K cost vectors in one pass, each lane
// bit-equal to its own replay_tape — every slot of the uncompacted batch against the single
// replay's instruction times, and the makespan of the compacted batch — on random costs, every
// lane count 1..kMaxLanes, example configs and every platform profile.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/topology.h"
#include "ppstream/config/config.h"
#include "ppstream/engine/tape.h"
#include "ppstream/engine/tape_batch.h"
#include "ppstream/lower/lower.h"
#include "random_cost.h"

namespace ppstream {
namespace {

using testing::RandomCost;

uint64_t bits(double x) { return std::bit_cast<uint64_t>(x); }

// Lanes 0..lanes-1 take the terms of RandomCost(seed0 + l), lane-minor, as a TermSource.
struct Lanes {
  std::vector<TapeCosts> costs;
  TapeBatch::TermSource source() const {
    return [this](bool arrival, int64_t first, int64_t count, int32_t lanes, double* out) {
      for (int64_t t = first; t < first + count; ++t)
        for (int32_t l = 0; l < lanes; ++l) {
          const TapeCosts& c = costs[static_cast<size_t>(l)];
          *out++ = (arrival ? c.arrival : c.fixed)[static_cast<size_t>(t)];
        }
      return true;
    };
  }
};

// RandomCost without host issue time (every HOST_ISSUE term 0: a batch may skip them).
class NoHostIssue : public RandomCost {
 public:
  using RandomCost::RandomCost;
  double host_issue_ms(const Program&, const Instr&) const override { return 0.0; }
};

// Replays `lanes` random cost vectors (Cost(seed0 + lane)) batched, compacted and not, against
// one replay_tape each; `zero` as TapeBatch's (the TermSource then leaves those terms out).
template <class Cost = RandomCost>
void check_lanes(const Tape& tape, int32_t lanes, uint64_t seed0, const std::string& what,
                 const TapeBatch::ZeroTerm& zero = {}, int64_t chunk_terms = TapeBatch::kChunkTerms) {
  Lanes in;
  std::vector<EngineResult> want;
  for (int32_t l = 0; l < lanes; ++l) {
    const Cost cost(seed0 + static_cast<uint64_t>(l));
    TapeCosts all = tape_costs(tape, &cost);
    if (zero) {  // the terms the batch asks for: those `zero` does not name
      TapeCosts kept;
      size_t f = 0, a = 0;
      for (const TapeEntry& e : tape.entries()) {
        if (e.cost == TapeCost::NONE) continue;
        const bool arrival = e.cost == TapeCost::ARRIVAL || e.cost == TapeCost::ARRIVAL_OR_EXTERNAL;
        const double x = arrival ? all.arrival[a++] : all.fixed[f++];
        if (!zero(e)) (arrival ? kept.arrival : kept.fixed).push_back(x);
      }
      all = std::move(kept);
    }
    in.costs.push_back(std::move(all));
    want.push_back(replay_tape(tape, &cost));
  }
  const TapeBatch compact(tape, true, zero, chunk_terms), full(tape, false, zero, chunk_terms);
  EXPECT_EQ(full.slots(), tape.slots());
  EXPECT_LE(compact.slots(), tape.slots());
  EXPECT_EQ(compact.fixed_terms(), static_cast<int64_t>(in.costs[0].fixed.size()));
  EXPECT_EQ(compact.arrival_terms(), static_cast<int64_t>(in.costs[0].arrival.size()));
  std::vector<double> buffer, chunk, ms(static_cast<size_t>(lanes), -1.0), ms_full(static_cast<size_t>(lanes), -1.0);
  ASSERT_TRUE(compact.replay(lanes, in.source(), buffer, chunk, ms.data()));
  std::vector<double> buffer_full;
  ASSERT_TRUE(full.replay(lanes, in.source(), buffer_full, chunk, ms_full.data()));
  const ProgramSet& set = tape.set();
  for (int32_t l = 0; l < lanes; ++l) {
    const EngineResult& w = want[static_cast<size_t>(l)];
    EXPECT_EQ(bits(w.makespan_ms), bits(ms[static_cast<size_t>(l)])) << what << " lane " << l << " of " << lanes;
    EXPECT_EQ(bits(w.makespan_ms), bits(ms_full[static_cast<size_t>(l)])) << what << " lane " << l << " (uncompacted)";
    int32_t g = 0;  // global instruction: slots 4g .. 4g + 3
    for (size_t p = 0; p < set.programs.size(); ++p) {
      for (size_t i = 0; i < set.programs[p].instrs.size(); ++i, ++g) {
        const InstrTiming& t = w.timing[p][i];
        const double got[4] = {TapeBatch::value(buffer_full, lanes, 4 * g, l), TapeBatch::value(buffer_full, lanes, 4 * g + 1, l),
                               TapeBatch::value(buffer_full, lanes, 4 * g + 2, l), TapeBatch::value(buffer_full, lanes, 4 * g + 3, l)};
        ASSERT_TRUE(bits(t.issue_ms) == bits(got[0]) && bits(t.ready_ms) == bits(got[1]) && bits(t.start_ms) == bits(got[2]) &&
                    bits(t.end_ms) == bits(got[3]))
            << what << " lane " << l << " of " << lanes << ": program " << p << " #" << i << ": replay " << t.issue_ms << "/"
            << t.ready_ms << "/" << t.start_ms << "/" << t.end_ms << ", batch " << got[0] << "/" << got[1] << "/" << got[2]
            << "/" << got[3];
      }
    }
  }
}

std::string example(const std::string& name) { return std::string(PPSTREAM_SOURCE_DIR) + "/examples/" + name; }

// small-pp2-vpp2-hsdp.yaml compiled (expanded or not) and its topology, to record tapes on.
struct Small {
  ProgramSet set;
  engine::Topology topo;
  explicit Small(bool expanded) : set(compile_it(expanded)), topo(engine::build_topology(set)) {}
  std::shared_ptr<const Tape> tape(PlatformKind k, const CostModel& cost) const {
    EngineResult r;
    return record_tape(topo, {k, &cost}, r);
  }
  static ProgramSet compile_it(bool expanded) {
    LowerOptions lo;
    lo.expanded = expanded;
    lo.verify_each_pass = false;
    return compile(load_config_file(example("small-pp2-vpp2-hsdp.yaml")), lo);
  }
};

TEST(TapeBatch, EveryLaneBitEqualToItsOwnReplay) {
  const PlatformKind platforms[] = {PlatformKind::STRICT,      PlatformKind::ASCEND_MINDSPORE,
                                    PlatformKind::CPU_SERIAL,  PlatformKind::ASCEND_ONE_COMM_STREAM,
                                    PlatformKind::STRICT_TIMED, PlatformKind::CPU_MCCL};
  int checked = 0;
  for (const char* file : {"small-pp2-vpp2-hsdp.yaml", "small-pp2-vpp2-fsdp.yaml"}) {
    for (bool expanded : {false, true}) {
      LowerOptions lo;
      lo.expanded = expanded;
      lo.verify_each_pass = false;
      const ProgramSet set = compile(load_config_file(example(file)), lo);
      const engine::Topology topo = engine::build_topology(set);
      for (PlatformKind k : platforms) {
        const RandomCost first(1);
        EngineResult r;
        const auto tape = record_tape(topo, {k, &first}, r);
        if (!tape) continue;
        ++checked;
        const std::string what = std::string(file) + (expanded ? " expanded " : " ") + to_string(k);
        for (int32_t lanes = 1; lanes <= TapeBatch::kMaxLanes; ++lanes) check_lanes(*tape, lanes, 10 * lanes, what);
      }
    }
  }
  EXPECT_GE(checked, 24) << "most cases must complete for the comparison to mean anything";
}

// Terms the caller's models never set are skipped, not added as 0: still bit-equal.
TEST(TapeBatch, SkippedZeroTermsStayBitEqual) {
  const Small small(true);
  for (PlatformKind k : {PlatformKind::ASCEND_MINDSPORE, PlatformKind::CPU_SERIAL, PlatformKind::STRICT_TIMED}) {
    const auto tape = small.tape(k, NoHostIssue(1));
    ASSERT_NE(tape, nullptr);
    const TapeBatch::ZeroTerm host = [](const TapeEntry& e) { return e.cost == TapeCost::HOST_ISSUE; };
    const TapeBatch all(*tape), skipping(*tape, true, host);
    EXPECT_LT(skipping.fixed_terms(), all.fixed_terms()) << "the set has host issue terms";
    for (int32_t lanes : {1, 3, 8}) check_lanes<NoHostIssue>(*tape, lanes, 40, std::string("no host issue ") + to_string(k), host);
  }
}

// With the host issue terms skipped, an instruction's issue is +0.0 in every replay: the batch
// drops it from its ready time's max (max(+0.0, x) is x), which leaves a copy of the stream
// predecessor's end, not replayed — at least one entry per instruction fewer — and every lane
// stays bit-equal (check_lanes, every slot of the uncompacted batch and the compacted makespan).
TEST(TapeBatch, OperandsOfValueZeroAreFolded) {
  const Small small(true);
  for (PlatformKind k : {PlatformKind::CPU_SERIAL, PlatformKind::STRICT_TIMED}) {
    const auto tape = small.tape(k, NoHostIssue(1));
    ASSERT_NE(tape, nullptr);
    const TapeBatch::ZeroTerm host = [](const TapeEntry& e) { return e.cost == TapeCost::HOST_ISSUE; };
    const TapeBatch all(*tape), folding(*tape, true, host);
    EXPECT_LE(folding.entries(), all.entries() - tape->instructions()) << to_string(k);
    for (int32_t lanes : {1, 2, 17, TapeBatch::kMaxLanes})
      check_lanes<NoHostIssue>(*tape, lanes, 70, std::string("folded ") + to_string(k), host);
  }
}

// Chunks of 1, 7 and 64 terms: the chunked term source is read across chunk boundaries.
TEST(TapeBatch, ChunksCoverEveryTerm) {
  const Small small(true);
  const auto tape = small.tape(PlatformKind::ASCEND_MINDSPORE, RandomCost(1));
  ASSERT_NE(tape, nullptr);
  ASSERT_GT(TapeBatch(*tape).fixed_terms(), 3 * 64);
  for (int64_t chunk : {1, 7, 64}) check_lanes(*tape, 5, 100, "chunk " + std::to_string(chunk), {}, chunk);
}

TEST(TapeBatch, RefusesALaneCountOutOfRangeAndStopsOnAFailedSource) {
  const Small small(false);
  const auto tape = small.tape(PlatformKind::STRICT_TIMED, RandomCost(1));
  ASSERT_NE(tape, nullptr);
  const TapeBatch batch(*tape);
  std::vector<double> buffer, chunk, ms(9);
  const TapeBatch::TermSource zeros = [](bool, int64_t, int64_t count, int32_t lanes, double* out) {
    std::fill(out, out + count * lanes, 0.0);
    return true;
  };
  EXPECT_THROW(batch.replay(0, zeros, buffer, chunk, ms.data()), std::invalid_argument);
  EXPECT_THROW(batch.replay(TapeBatch::kMaxLanes + 1, zeros, buffer, chunk, ms.data()), std::invalid_argument);
  const TapeBatch::TermSource fails = [](bool, int64_t, int64_t, int32_t, double*) { return false; };
  EXPECT_FALSE(batch.replay(2, fails, buffer, chunk, ms.data()));
  ASSERT_TRUE(batch.replay(1, zeros, buffer, chunk, ms.data()));
  EXPECT_EQ(ms[0], replay_tape(*tape, nullptr).makespan_ms);
}

}  // namespace
}  // namespace ppstream
