// Metrics of one simulated step, computed from the engine's per-instruction timings, with the
// names DESIGN.md fixes for simulator, runtime traces and analyzer alike (all times in ms from
// step start). Definitions:
//   step_time_ms          the makespan (last instruction end)
//   compute_wait_ms       per rank: time a compute stream is blocked — at the head on a WAIT
//                         (EVENT_WAIT) or inside a collective issued on it (CommHandle.wait)
//   pp_wait_ms            per BATCH with a receive: posted → matched (peer posted its mirror)
//   compute_ms            per rank: F, B, I, W and OPT_STEP time (RankFigures)
//   bubble_ratio          mean over ranks of (step − compute_ms) / step
//   bubble_over_ideal     (step − ideal) / ideal, ideal = the largest compute_ms
//   reduce_exposed_ms     per rank: compute blocked on reductions (inline REDUCE_GRAD on compute,
//                         or compute WAIT on a RECORD that follows a REDUCE_GRAD); top level: max
//   reduce_overlap_ratio  |REDUCE_GRAD intervals ∩ compute intervals| / |REDUCE_GRAD intervals|
//                         (per rank, and summed over ranks at top level)
//   critical_path         the chain of instructions that fixed the step end, walked back through
//                         stream order, event waits, P2P matches and collective arrivals
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ppstream/engine/engine.h"
#include "ppstream/engine/replica_tape.h"
#include "ppstream/program/ir.h"
#include "ppstream/program/rank_figures.h"

namespace ppstream::engine {
struct Topology;  // src/engine/topology.h
}

namespace ppstream::sim {

// What a stream wait waited for, from the instruction that precedes the RECORD on its stream.
enum class WaitKind : uint8_t { P2P, REDUCE, UNSHARD, COMPUTE, OTHER };
const char* to_string(WaitKind k);

struct StreamWait {
  Rank rank;
  std::string stream;
  int32_t index = 0;          // instruction index in the rank's program
  std::string text;           // canonical text of the waiting instruction
  std::string event;          // empty for a collective on the stream itself
  WaitKind kind = WaitKind::OTHER;
  double start_ms = 0, end_ms = 0;
  double ms() const { return end_ms - start_ms; }
  std::string cause;          // canonical text of what it waited for (the BATCH, REDUCE_GRAD, …)
  std::optional<Rank> peer;   // P2P: the rank the batch receives from
};

struct P2PTiming {
  Rank rank;
  int32_t index = 0;
  std::string stream, text;
  double posted_ms = 0, matched_ms = 0, end_ms = 0;
  double pp_wait_ms() const { return matched_ms - posted_ms; }
};

// A rank's figures (the ones the analyzer also reports are RankFigures, program/rank_figures.h:
// compute_ms, compute_wait_ms, reduce_*; reductions are its REDUCE_GRADs) and the simulator's own.
struct RankMetrics : RankFigures {
  int32_t pp_rank = 0;
  double step_end_ms = 0;  // the rank's last instruction end
  std::optional<StreamWait> longest_compute_wait;
};

struct CriticalStep {
  Rank rank;
  std::string stream;
  int32_t index = 0;
  std::string text;
  double start_ms = 0, end_ms = 0;
  std::string via;  // how its predecessor fixed its start: "stream", "event …", "p2p <-r2", …
};

struct SimMetrics {
  double step_time_ms = 0;
  double bubble_ratio = 0;
  double bubble_over_ideal = 0;
  double ideal_compute_ms = 0;
  double reduce_exposed_ms = 0;
  std::optional<double> reduce_overlap_ratio;
  std::vector<RankMetrics> ranks;          // every program, in set order
  std::vector<StreamWait> compute_waits;   // compute-stream waits > 0 of the detailed ranks
  std::vector<P2PTiming> p2p;              // batches with a receive, detailed ranks
  std::vector<CriticalStep> critical_path; // from the step start to its end
};

struct MetricsOptions {
  // Detail lists (compute_waits, p2p) only for ranks passing this; default every rank.
  std::function<bool(const Program&)> detail;
  // The set's engine topology when the caller has built one (simulate shares its own); else
  // compute_metrics builds it.
  const engine::Topology* topology = nullptr;
};

// Throws std::invalid_argument if the run did not complete (a deadlock has no step time).
SimMetrics compute_metrics(const ProgramSet& set, const EngineResult& run, const CostModel& cost,
                           const MetricsOptions& opts = {});

// compute_metrics of an expanded world's run from its replica-vector evaluation
// (ppstream/engine/replica_tape.h): `tmpl` the template set, renumbered to each replica in turn
// (and back to replica 0 on return), `topo` its template topology (engine::build_topology(tmpl,
// true)), `run` the vector replay with timings. Equal to compute_metrics of the expanded set and
// its engine run (every figure, list and text; tests/cpp/sim/replica_tape_test.cpp); opts.detail
// is asked of each replica's renumbered programs.
SimMetrics compute_replica_metrics(ProgramSet& tmpl, const engine::Topology& topo, const ReplicaRun& run,
                                   const CostModel& cost, const MetricsOptions& opts = {});

// Index of the program of `rank` in set.programs (sorted by rank); throws if absent.
size_t program_index(const ProgramSet& set, Rank rank);

}  // namespace ppstream::sim
