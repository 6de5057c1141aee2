// The engine as the what-if evaluator of a Megatron timeline (docs/whatif.md "Evaluation on the
// engine"): the lifted graph's verified stream programs (graph_programs.h), run by the engine
// (`strict-timed`) once per world and replayed from its tape (engine/tape.h) once per step under
// a cost view, on the full world (every DP rank) or on the
// reduced world of two DP rows that stands for it when all DP ranks but one are ideal.
//
// Why the reduced world is exact. In the full world with DP rank d measured and every other DP
// rank ideal, the ideal workers (e, p), e ≠ d, have the same programs and the same costs. Rows
// interact only through the DP-synchronised collectives (a stage's all-gather / reduce-scatter /
// separate all-reduce over its DP ranks, clip's all-reduce over every worker; P2P pairs and the
// embedding all-reduce stay inside a DP rank): each member ends at the last arrival over the
// group plus its own transfer. By induction over the template's topological order (every engine
// time is a max of earlier times plus a cost, independent of processing order), every ideal row
// has the same times, so the last arrival over the group is max(row d's, the common ideal row's)
// — the same as in a world of two rows, d and one ideal row, whose groups span the two. The step
// (makespan) is the max over rows: again row d's or the ideal row's. So the engine on the
// 2-row world (programs_of_graph with dp = 2: worker (row i, stage p) is rank 2p + i) gives the
// full world's step, at 2 · pp instead of dp · pp programs.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/topology.h"
#include "graph.h"
#include "graph_programs.h"
#include "job.h"
#include "ppstream/engine/tape.h"
#include "ppstream/engine/tape_batch.h"
#include "ppstream/verify/verify.h"

namespace ppstream::whatif {

// A cost view with its negative values taken as 0: the engine cannot start an instruction
// before its start condition nor end a transfer before its group's last arrival (its cost
// model's values must be >= 0), where the graph keeps the trace's small negative transfers and
// delays (docs/whatif.md "Evaluation on the engine", "Negative costs").
// A view may also have `bool fill_lanes(ViewField f, int32_t k, int64_t j0, int64_t stride,
// int32_t n, double* out) const`: writes field f of op k on rows j0, j0 + stride, … (n of them)
// — the same values as view_value on each — and returns true, or returns false (then each row is
// asked). steps_ms's term source uses it (a lane per step: rows a step's dp apart).
//
// Whether a cost view's delay(k, j) is +0.0 for every op and row: a view says so with a member
// `bool no_delays() const` (a view without one may have delays). EngineWorld::steps_ms then
// replays the tape without the launch-delay terms (docs/whatif.md "Evaluation on the engine").
template <class View>
bool has_no_delays(const View& view) {
  if constexpr (requires { { view.no_delays() } -> std::convertible_to<bool>; })
    return view.no_delays();
  else
    return false;
}

template <class View>
struct NonNegative {
  const View& view;
  double dur(int32_t k, int64_t j) const { return std::max(0.0, view.dur(k, j)); }
  double transfer(int32_t k, int64_t j) const { return std::max(0.0, view.transfer(k, j)); }
  double delay(int32_t k, int64_t j) const { return std::max(0.0, view.delay(k, j)); }
  bool no_delays() const { return has_no_delays(view); }
};

// A lifted world: its programs and their engine topology, built once and shared by the verifier
// and every engine run on them.
struct EngineWorld {
  GraphPrograms gp;
  engine::Topology topo;

  explicit EngineWorld(GraphPrograms programs) : gp(std::move(programs)), topo(engine::build_topology(gp.set)) {}
  EngineWorld(const EngineWorld&) = delete;
  EngineWorld& operator=(const EngineWorld&) = delete;

  // The profiles the programs were verified under (require_verified); empty until they are.
  std::vector<PlatformKind> verified_under;

  // The verifier on this world's topology (verify.h rules, the profiles of `opts`); throws
  // VerifyError with `what` as its context on any violation, else adds the profiles to
  // verified_under.
  void require_verified(const VerifyOptions& opts, const std::string& what);

  // The engine's step (makespan, ms) of step `step` under `view` (rows: step · gp.dp + row).
  // The first call runs the engine and records its tape (record_tape: the same result as
  // run_checked); every later one replays that tape under its own cost view. The programs are
  // the same for every step and view, only the costs differ, so the tape holds for all of them
  // and each replay is bit-equal to a fresh engine run (engine/tape.h). Not thread-safe (the
  // tape and the replay buffers are this world's).
  template <class View>
  double step_ms(const View& view, int32_t step, EngineResult* keep = nullptr) const {
    const NonNegative<View> clamped{view};
    const GraphCostModel<NonNegative<View>> cost(gp, clamped, step);
    EngineResult r;
    if (!tape_) {
      tape_ = record_tape(topo, {PlatformKind::STRICT_TIMED, &cost}, r);
      if (!tape_) throw std::logic_error("whatif: the lifted programs deadlock:\n" + format_deadlock(gp.set, r));
    } else {
      if (!terms_) terms_ = std::make_unique<TermTable>(term_table(*tape_));
      // The tape's terms straight from the view (no virtual call, no allocation); a value the
      // engine would refuse (not finite: the clamp leaves no negative one) goes the checked way,
      // which throws its error.
      costs_.fixed.resize(terms_->fixed.size());
      costs_.arrival.resize(terms_->arrival.size());
      if (!fill_terms(clamped, step, 1, terms_->fixed, costs_.fixed.data()) ||
          !fill_terms(clamped, step, 1, terms_->arrival, costs_.arrival.data()))
        costs_ = tape_costs(*tape_, &cost);
      r = replay_tape(*tape_, costs_.fixed, costs_.arrival, slots_, keep != nullptr);
    }
    const double ms = r.makespan_ms;
    if (keep) *keep = std::move(r);
    return ms;
  }

  // The step times of steps 0 .. steps - 1 under `view`, each bit-equal to step_ms(view, s):
  // after the recording run (the first call's step 0), the steps are replayed kMaxLanes at a
  // time by one batched pass over the tape (engine/tape_batch.h), one step per lane. `keep`:
  // step 0's full result (step_ms's), the others give the makespan only. A view with no delays
  // (has_no_delays) is replayed by a second batch that has the launch-delay terms as zero terms
  // too: each is +0.0 in that view, so skipping its addition is exact (tape_batch.h), and a
  // lifted op's start (its ready time plus the delay) becomes a copy the batch does not replay.
  template <class View>
  std::vector<double> steps_ms(const View& view, int32_t steps, EngineResult* keep = nullptr) const {
    std::vector<double> out(static_cast<size_t>(std::max(steps, 0)));
    int32_t s = 0;
    if (steps > 0 && (!tape_ || keep)) out[0] = step_ms(view, s++, keep);
    if (s >= steps) return out;
    if (!terms_) terms_ = std::make_unique<TermTable>(term_table(*tape_));
    const NonNegative<View> clamped{view};
    const bool no_delays = has_no_delays(clamped);
    std::unique_ptr<TapeBatch>& batch = no_delays ? batch_no_delays_ : batch_;
    if (!batch)
      batch = std::make_unique<TapeBatch>(*tape_, true, [this, no_delays](const TapeEntry& e) { return zero_term(e, no_delays); });
    const std::vector<Term>& batch_fixed = no_delays ? terms_->no_delay_fixed : terms_->batch_fixed;
    const std::vector<Term>& batch_arrival = no_delays ? terms_->no_delay_arrival : terms_->batch_arrival;
    // Lanes per pass: up to kMaxLanes while the pass's buffer (live slots × lanes doubles) fits
    // in kPassBytes (a core's L2: past it the reads of long-live slots miss, docs/whatif.md
    // "Benchmark"), and at least 8. The figures are the same for any width (each lane is its own).
    const int32_t per_pass = static_cast<int32_t>(std::clamp<int64_t>(
        static_cast<int64_t>(kPassBytes / (sizeof(double) * static_cast<size_t>(std::max(batch->slots(), 1)))), 8,
        TapeBatch::kMaxLanes));
    while (s < steps) {
      const int32_t first = s;
      const int32_t lanes = std::min(steps - s, per_pass);
      // Term t of lane l: step first + l's value (fill_terms' lookup, lane-minor; the batch's
      // terms are never ZERO).
      const auto source = [&](bool arrival, int64_t from, int64_t count, int32_t w, double* dst) {
        const Term* m = (arrival ? batch_arrival : batch_fixed).data() + from;
        bool finite = true;
        const auto each_lane = [&](auto value) {
          const int64_t row = int64_t{first} * gp.dp + m->row;
          for (int32_t l = 0; l < w; ++l) {
            const double x = value(m->op, row + int64_t{l} * gp.dp);
            finite &= std::isfinite(x) && x >= 0.0;  // the batch's terms are >= 0 (tape_batch.h)
            *dst++ = x;
          }
        };
        for (int64_t t = 0; t < count; ++t, ++m) {
          if constexpr (requires { clamped.view.fill_lanes(m->field, m->op, int64_t{0}, int64_t{1}, w, dst); }) {
            // A view that gives a term's lanes at once where it can (one value on every lane).
            const int64_t row = int64_t{first} * gp.dp + m->row;
            if (clamped.view.fill_lanes(m->field, m->op, row, int64_t{gp.dp}, w, dst)) {
              for (int32_t l = 0; l < w; ++l, ++dst) {
                *dst = std::max(0.0, *dst);  // NonNegative's clamp, as each_lane's
                finite &= std::isfinite(*dst) && *dst >= 0.0;
              }
              continue;
            }
          }
          switch (m->field) {
            case ViewField::DUR: each_lane([&](int32_t k, int64_t j) { return clamped.dur(k, j); }); break;
            case ViewField::TRANSFER: each_lane([&](int32_t k, int64_t j) { return clamped.transfer(k, j); }); break;
            case ViewField::DELAY: each_lane([&](int32_t k, int64_t j) { return clamped.delay(k, j); }); break;
            case ViewField::ZERO: each_lane([](int32_t, int64_t) { return 0.0; }); break;
          }
        }
        return finite;
      };
      if (!batch->replay(lanes, source, batch_slots_, batch_chunk_, out.data() + s)) {
        for (int32_t l = 0; l < lanes; ++l) out[static_cast<size_t>(s + l)] = step_ms(view, s + l);  // throws its error
      }
      s += lanes;
    }
    return out;
  }

  static constexpr size_t kPassBytes = size_t{1} << 20;  // steps_ms: the most a pass's buffer takes, past 8 lanes

  // The tape's size (bytes; 0 until the first step_ms recorded it).
  size_t tape_bytes() const { return tape_ ? tape_->bytes() : 0; }

 private:
  // One tape cost term as GraphCostModel computes it: which view value (view_field) of which
  // template op, on which DP row of the step (rank % dp).
  struct Term {
    int32_t op = 0;
    int32_t row = 0;
    ViewField field = ViewField::ZERO;
  };
  struct TermTable {
    std::vector<Term> fixed, arrival;              // in tape_costs' order
    std::vector<Term> batch_fixed, batch_arrival;  // the same without the ZERO ones (the batch's terms)
    std::vector<Term> no_delay_fixed, no_delay_arrival;  // without the DELAY ones too (the no-delay batch's)
  };
  // The tape's terms (tape_costs order) mapped to GraphCostModel's lookups, built once per world.
  TermTable term_table(const Tape& tape) const;
  // view_field ZERO (with `no_delays`, DELAY too): the batch skips its addition.
  bool zero_term(const TapeEntry& e, bool no_delays) const;
  // Writes step `step`'s value of every term to out[t · stride]; false when one is not finite.
  template <class View>
  bool fill_terms(const View& view, int32_t step, int32_t stride, const std::vector<Term>& terms, double* out) const {
    const int64_t base = int64_t{step} * gp.dp;
    bool finite = true;
    for (size_t t = 0; t < terms.size(); ++t, out += stride) {
      const Term& m = terms[t];
      const double x = view_value(view, m.field, m.op, base + m.row);
      finite &= std::isfinite(x);
      *out = x;
    }
    return finite;
  }

  mutable std::shared_ptr<const Tape> tape_;   // recorded by the first step_ms
  mutable std::unique_ptr<TermTable> terms_;   // built at the first replay
  mutable std::unique_ptr<TapeBatch> batch_;   // built at the first batched replay (of a view with delays)
  mutable std::unique_ptr<TapeBatch> batch_no_delays_;  // built at the first batched replay of a view without
  mutable TapeCosts costs_;                    // replay buffers, reused across calls
  mutable std::vector<double> slots_, batch_slots_, batch_chunk_;
};

// The job's template with `rows` DP rows instead of job.dp (no tables): what programs_of_graph
// needs to lift the reduced world.
Job rows_view(const Job& job, int32_t rows);

// Lifts `g` as the full world (job.dp rows) and, with `with_reduced` and job.dp > 2, the reduced
// world of two rows; verifies each under strict (throws VerifyError naming `what`).
struct EngineWorlds {
  std::unique_ptr<EngineWorld> full, reduced;  // reduced: null when job.dp <= 2 (full is the reduced world)
  const EngineWorld& two_rows() const { return reduced ? *reduced : *full; }
};
EngineWorlds lift_worlds(const Job& job, const Graph& g, std::vector<std::string>& notes, const std::string& what,
                         bool with_reduced);

}  // namespace ppstream::whatif
