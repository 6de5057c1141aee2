// The per-rank part of the analysis: what the analysis keeps of one rank once its slices can be
// freed (docs/analyze.md "What bounds memory"). A digest is computed from the rank's timeline
// alone, right after the rank is read; the cross-rank part (metrics.cpp: P2P pairing, positions,
// stragglers, wait chains) reads digests only, and re-reads a rank's file where a wait chain
// visits it (rank_source.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ppstream/analyze/analyze.h"

namespace ppstream::analyze::detail {

// Which slices of a rank a figure covers (docs/analyze.md "Steps"): all; one step (by index into
// RankTimeline::steps, whose marker gives the host step time); all steps but the last (HTA's window).
struct StepSelection {
  enum class Kind : uint8_t { ALL, ONE, ALL_BUT_LAST };
  Kind kind = Kind::ALL;
  uint32_t step = 0;  // ONE: the step's index; ALL_BUT_LAST: the last step's index
  bool contains(std::optional<uint32_t> s) const {
    switch (kind) {
      case Kind::ALL: return true;
      case Kind::ONE: return s && *s == step;
      case Kind::ALL_BUT_LAST: return s && *s != step;
    }
    return false;
  }
};

// The two clock tolerances (chain.h) a digest's wait attributions may be computed for: the set's
// tolerance is known only once every file is read (one clock only when every file has one).
enum class Tol : uint8_t { GLOBAL = 0, PER_RANK = 1 };
inline constexpr size_t kTols = 2;

// One P2P slice, kept for the pairing (p2p_pairs.h) and pp_wait_ms.
struct P2PRecord {
  size_t index = 0;  // into RankTimeline::slices: the key the pairing and the chain walk share
  int64_t start_ns = 0, dur_ns = 0;
  uint32_t stream = 0, name = 0;  // name: a string id of the set
  std::optional<uint32_t> step;
  std::vector<P2PPart> p2p;
  int64_t end_ns() const { return start_ns + dur_ns; }
};

// One collective op of a rank as the straggler analysis sees it (HCCL-stream tasks named after
// their op already folded into it, stragglers.h).
struct Arrival {
  Rank rank;
  uint32_t name = 0;  // string id of the set
  int64_t start_ns = 0, end_ns = 0;
};
struct GroupOps {
  uint32_t group = 0;  // string id of the set
  std::vector<Arrival> ops;  // in start order
};

// A stream wait that may start a wait chain.
struct WaitCandidate {
  size_t index = 0;  // into RankTimeline::slices
  int64_t start_ns = 0, dur_ns = 0;
  bool on_compute = false;  // on the rank's compute stream
};

// One window's figures of one rank: everything of RankMetrics but what needs other ranks
// (pp_wait_ms, pp_transfer_ms, p2p_recvs, p2p_unpaired: the pairing) or the set's clock tolerance
// (reduce_exposed_ms, waits_by_*: which slice released each stream wait).
struct WindowFigures {
  StepSelection sel;
  RankMetrics m;
  int64_t reduce_on_compute_ns = 0;  // reductions run on the compute stream itself
  struct Attribution {
    int64_t reduce_wait_ns = 0;  // compute-stream waits a reduction released
    int64_t by_record = 0, by_stream = 0, by_timing = 0;
  };
  std::array<std::optional<Attribution>, kTols> by_tol;  // for each tolerance the digest was made for
};

struct RankDigest {
  Rank rank;
  std::string source;                  // the file the rank was read from
  std::vector<std::string> streams;    // RankTimeline::streams' names
  std::vector<StepMarker> steps;
  std::optional<int64_t> base_ns;
  std::optional<int64_t> first_start_ns;  // the first device slice's start (positions, clocks.h)
  int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;  // device slices' first start, last end
  size_t slices = 0;      // the timeline's slice count: a re-read must give as many
  bool freed = false;     // the timeline's slices were freed; the chain walk re-reads `source`
  // Whole trace: `total` (every slice), `by_step` (step number → its first marker's window, in
  // step order), `hta` (≥ 2 steps). One step (--step): `total` is that step, when the rank has it.
  std::optional<WindowFigures> total;
  std::vector<std::pair<int64_t, WindowFigures>> by_step;
  std::optional<WindowFigures> hta;
  std::vector<P2PRecord> p2p;          // every P2P slice, in slice order
  std::vector<GroupOps> collectives;   // the straggler analysis' ops (of the step when --step)
  // Whole trace: the `chains` longest waits on the compute stream and on the other streams;
  // --step: every wait of positive duration (the window is known only once every rank is read).
  std::vector<WaitCandidate> waits;
};

struct DigestOptions {
  std::optional<int64_t> step;  // AnalyzeOptions::step
  size_t chains = 3;            // AnalyzeOptions::chains
  std::array<bool, kTols> tols{};  // the tolerances to attribute stream waits for
};
// The tolerances a set's digest needs: only the set's own when it is known (`global_clock` of a
// whole set), both while it may still be global (a file with one clock; a later file may not be).
std::array<bool, kTols> tols_for(bool global_clock, bool final);
Tol tol_of(const TraceSet& set);

// The per-rank part: every window's figures, the P2P slices, collectives and wait candidates of
// `tl` (string ids of `strings`). Reads `tl` only.
RankDigest digest_rank(const RankTimeline& tl, const StringTable& strings, const DigestOptions& opts);

// The first start and last end of `tl`'s device slices (RankDigest::first_ns, last_ns).
std::pair<int64_t, int64_t> digest_rank_bounds(const RankTimeline& tl);

// Maps the digest's string ids through `id` (a file's id → the set's, read_parallel.h).
void remap_strings(RankDigest& d, const std::vector<uint32_t>& id);

// The cross-rank fields of `w` (pp_* by `pairs`, the tolerance's attributions): the rank's
// RankMetrics for that window, moved out of `w` (each window is finished once). Appends the
// window's receive waits to `waits` when given.
class P2PPairs;
class RankClocks;
RankMetrics finish_window(const RankDigest& d, WindowFigures& w, const P2PPairs& pairs, Tol tol,
                          const StringTable& strings, std::vector<P2PWait>* waits, const RankClocks& clocks);

}  // namespace ppstream::analyze::detail
