// The analyzer's public API: metrics of a trace set (names as in DESIGN.md, formulas in
// docs/analyze.md), the cross-rank PP wait chain, and baseline-vs-optimized diffs.
// Every result has to_json() (for --json and the Python binding) and to_text().
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "ppstream/analyze/timeline.h"
#include "ppstream/program/rank_figures.h"

namespace ppstream::analyze {

struct AnalyzeOptions {
  std::optional<int64_t> step;  // only this step (needs step markers; else TraceError)
  size_t chains = 3;            // how many of the longest compute-stream waits get a wait chain
};

// Stream-wait total of one stream of one rank.
struct StreamMetrics {
  std::string stream;
  double busy_ms = 0;    // |union of the stream's non-wait slices|
  double wait_ms = 0;    // Σ STREAM_WAIT durations on the stream
  int64_t waits = 0;
};

// Communication/computation overlap for one class of communication.
// ratio = overlap_ms / comm_ms where comm and compute are each merged interval unions.
struct OverlapMetrics {
  std::string kind;   // "all", "collective", "p2p"
  std::string group;  // "" for the whole kind
  double comm_ms = 0;
  double overlap_ms = 0;   // |comm ∩ compute|
  double exposed_ms = 0;   // |comm| − |comm ∩ compute|
  std::optional<double> ratio;  // absent when comm_ms == 0
};

// One receiving P2P slice's wait (DESIGN.md: recv issued → matched, i.e. the later of its start
// and its paired sends' starts on aligned clocks) and the transfer after it (matched → end).
struct P2PWait {
  Rank rank;
  std::string stream;
  std::string name;
  double start_ms = 0;  // position: on the set's common base (AnalysisResult::clock_base), ms after its origin
  double wait_ms = 0;   // the whole slice when no send is paired (paired == false)
  double transfer_ms = 0;
  bool paired = true;
};

// All metrics of one rank over the analyzed window: the figures the simulator also reports
// (RankFigures, program/rank_figures.h: compute_ms = |union of compute slices|, the producer's
// "Computing"; compute_wait_ms = Σ stream waits on compute_stream; reduce_*: reductions are
// is_reduction slices, reduce_exposed_ms counting those on compute_stream and its waits a
// reduction released) and the analyzer's own.
struct RankMetrics : RankFigures {
  std::optional<int32_t> pp_rank;
  std::string compute_stream;  // the stream with the most compute time
  double step_time_ms = 0;     // host step (marker duration; whole trace: the mean marker duration);
                               // without markers the device span
  std::optional<double> host_step_ms;  // the step marker's duration (ProfilerStep#N), when one applies
  double device_step_ms = 0;   // first start → last end of the window's compute and comm slices
                               // (the producer's "Stage")
  double span_ms = 0;          // first start → last end of the window's device slices (any kind)
  std::optional<double> preparing_ms;  // device step start − host step start ("Preparing")
  double comm_ms = 0;          // |union of communication slices| ("Communication")
  double overlapped_ms = 0;    // |comm ∩ compute| ("Overlapped")
  double comm_not_overlapped_ms = 0;  // comm_ms − overlapped_ms ("Communication(Not Overlapped)")
  double free_ms = 0;          // device_step_ms − compute_ms − comm_not_overlapped_ms ("Free")
  double stream_wait_ms = 0;   // Σ stream waits on all streams
  double pp_wait_ms = 0;       // Σ P2PWait::wait_ms over receiving P2P slices
  double pp_transfer_ms = 0;   // Σ P2PWait::transfer_ms
  int64_t p2p_recvs = 0;
  int64_t p2p_unpaired = 0;    // receiving slices without a paired send (counted whole)
  double bubble_ms = 0;        // max(step_time_ms, extent) − compute_ms, extent = marker start → last end
  double bubble_ratio = 0;     // bubble_ms / max(step_time_ms, extent), in [0, 1]
  // Reductions = collectives whose op is all-reduce, reduce-scatter or reduce (is_reduction,
  // timeline.h: REDUCE_GRAD, hcom_allReduce, ncclKernel_ReduceScatter…; never UNSHARD / all-gather).
  double reduce_unoverlapped_ms = 0; // reduce_comm_ms − reduce_overlap_ms (HTA-style "exposed")
  // The window's stream waits by the rule that attributed each to its releaser (WaitRule):
  int64_t waits_by_record = 0;  // the awaited event's cudaEventRecord (wait_on_cuda_event_record_corr_id)
  int64_t waits_by_stream = 0;  // the stream it was recorded on (wait_on_stream)
  int64_t waits_by_timing = 0;  // neither in the trace: the slice on another stream ending with it
  std::vector<StreamMetrics> streams;
  std::vector<OverlapMetrics> overlap;  // "all", "collective", "p2p", then per group
};

// One step (or the whole trace when there are no markers) across ranks.
struct StepMetrics {
  std::optional<int64_t> step;  // absent: whole trace (or a window of steps)
  std::string window;           // "" one step; "whole trace"; "hta_window" (all steps but the last)
  double step_time_ms = 0;      // one step: max over ranks; whole trace: mean of the steps'
                                // step_time_ms when there are markers, else the span
  double span_ms = 0;           // the window's device span (max over ranks; makespan on a global clock)
  // Set-level figures, defined as the simulator's (docs/analyze.md "Metrics"):
  double bubble_ratio = 0;       // mean over ranks of (step_time_ms − compute_ms) / step_time_ms
  double reduce_exposed_ms = 0;  // max over ranks
  std::optional<double> reduce_overlap_ratio;  // Σ reduce_overlap_ms / Σ reduce_comm_ms
  std::vector<RankMetrics> ranks;
};

// One link of a wait chain, e.g. "rank 8192's send was issued 470.1 ms late".
struct ChainLink {
  Rank rank;
  std::string stream;
  std::string what;     // the slice's name
  std::string reason;   // one sentence
  double at_ms = 0;     // when: the slice's start on the set's common base (AnalysisResult::clock_base)
  double delay_ms = 0;  // wait or lateness this link accounts for
  // Set on the link a stream wait was attributed to (the slice that released it): which rule
  // found it (WaitRule: the event's record, its recorded stream, or timing).
  std::optional<WaitRule> attributed_by{};
};
struct WaitChain {
  Rank rank;
  std::string stream;
  double wait_ms = 0;
  double at_ms = 0;  // the wait's start on the set's common base
  std::vector<ChainLink> links;  // first: the wait itself; then cause after cause
};

// Stragglers (docs/analyze.md "Stragglers"). A collective completes on all members at about the
// same time, so a member's arrival lag = (longest duration of the instance) − (its duration):
// clock-free, valid on unsynchronised ranks.
struct CollectiveSkew {
  std::string group, op;   // op: the name on the first arriver
  int64_t ordinal = 0;     // k-th collective of the group on each rank (the instance key)
  size_t ranks = 0;        // members seen in the loaded traces
  Rank first_rank, last_rank;
  double skew_ms = 0;      // arrival of the last − arrival of the first (the first's wait)
};
struct SlowRank {
  std::string group;
  Rank rank;
  int64_t instances = 0;   // instances of the group the rank is in
  int64_t last = 0;        // instances where it arrived last
  double late_ms = 0;      // Σ its arrival lag
  double caused_wait_ms = 0;  // Σ skew of the instances where it was last
};
// "rank X waited at op Y for rank Z": Z's own lateness is then explained by the collective it
// waited in just before, for its last arriver, and so on.
struct StragglerLink {
  Rank waiter;
  std::string group, op;
  int64_t ordinal = 0;
  Rank waited_for;
  double wait_ms = 0;
};

// A vendor figure reported beside ours, labelled with who computed it.
struct VendorFigure {
  std::string source, producer, scope, column;
  double value_ms = 0;
};

struct AnalysisResult {
  std::vector<std::string> sources;
  std::optional<int64_t> selected_step;
  StepMetrics total;               // the selected step, or the whole trace
  std::vector<StepMetrics> steps;  // per step when markers exist
  std::optional<StepMetrics> hta_window;
  std::vector<CollectiveSkew> skews;        // the 10 instances with the largest arrival skew
  std::vector<SlowRank> slow_ranks;         // per group and rank, by caused_wait_ms
  std::vector<StragglerLink> straggler_chain;  // from the largest skew back across ranks  // all steps but the last (HTA's default), ≥ 2 steps
  int64_t dropped_events = 0;       // events dropped for an out-of-bounds duration (see notes)
  std::vector<CommLinkRecord> comm_links;
  std::vector<P2PWait> longest_pp_waits;  // top 10
  std::vector<WaitChain> chains;
  std::vector<VendorFigure> vendor;  // step_trace_time.csv columns (Bubble etc.)
  std::vector<CommOpRecord> comm_ops;
  std::vector<std::string> producer_metrics;  // our traces' own metric objects, verbatim
  std::vector<std::string> notes;             // reading assumptions (e.g. rank not in the file)
  // How every position (P2PWait::start_ms, WaitChain / ChainLink at_ms) was put on one base:
  // "global" (one clock), "base_time" (producers' base times), "p2p" (aligned by P2P pairs),
  // "own_start" (each rank's positions relative to its own first device slice).
  std::string clock_base = "global";
  std::string to_json() const;
  // The same bytes as to_json(), written piece by piece (a step's ranks one at a time), so a report
  // of thousands of ranks is not held as one JSON document.
  void write_json(std::ostream& out) const;
  std::string to_text() const;
};

struct DiffRow {
  std::string scope;   // "all", "rank 3", "stage 1"
  std::string metric;  // "step_time_ms", …
  std::optional<double> baseline, optimized;
  std::optional<double> change;      // optimized − baseline
  std::optional<double> change_pct;  // 100 · change / |baseline|
};
struct DiffResult {
  std::vector<std::string> baseline_sources, optimized_sources;
  std::vector<DiffRow> rows;
  std::string to_json() const;
  std::string to_text() const;
};

AnalysisResult analyze(const TraceSet& set, const AnalyzeOptions& opts = {});
// The same report as analyze() of read_paths(paths), read streaming: each rank's per-rank figures
// are made right after its file is read and its slices freed, so memory holds about one rank per
// reader thread, not the set (docs/analyze.md "Streaming"). Throws TraceError as read_paths, then analyze.
AnalysisResult analyze_paths(const std::vector<std::string>& paths, const AnalyzeOptions& opts = {});
DiffResult diff(const AnalysisResult& baseline, const AnalysisResult& optimized);
DiffResult diff_paths(const std::vector<std::string>& baseline,
                      const std::vector<std::string>& optimized, const AnalyzeOptions& opts = {});

}  // namespace ppstream::analyze
