// The analysis in two parts (docs/analyze.md "What bounds memory"): the per-rank part makes each
// rank's digest (rank_digest.h) from its timeline alone; the cross-rank part (analyze_digests)
// reads only the digests, and the full timelines of the ranks a wait chain visits.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "rank_digest.h"
#include "rank_source.h"

namespace ppstream::analyze::detail {

// The cross-rank part: the report of a set whose ranks are `ranks` (one digest per rank, sorted
// by rank; their windows' figures are moved into the report); `set` gives everything else
// (strings, notes, sources, vendor rows, the clock flag), `source` the timelines the wait chains walk.
AnalysisResult analyze_digests(const TraceSet& set, std::vector<RankDigest>& ranks, RankSource& source,
                               const AnalyzeOptions& opts);

// What a streaming analysis held (tests and the benchmark's docs read it).
struct StreamStats {
  size_t ranks = 0;                // ranks analyzed
  size_t freed_ranks = 0;          // ranks whose slices were freed right after their digest
  size_t held_after_read = 0;      // ranks of the set holding slice memory once every file is read
  size_t peak_resident_ranks = 0;  // most ranks with their slices in memory at once (ResidentRanks)
  size_t rereads = 0;              // files read again for the wait chains
};

// analyze_paths (analyze.h) on `threads` reader threads: each Chrome trace file's ranks are
// digested on its reader thread right after the file is read and their slices freed, so at most
// about threads + 1 files' ranks are held at once, plus the files the wait chains re-read (2
// cached, RereadSource). Where an input is an Ascend profiler or train run directory (their
// cross-file joins, resolve_comm_links, edit a rank's slices after every file is read) the set
// is held whole, as read_paths reads it. The report equals analyze(read_paths(paths)) byte for
// byte; the errors are read_paths' (the first in input order), then analyze's.
AnalysisResult analyze_streaming(const std::vector<std::string>& paths, const AnalyzeOptions& opts, unsigned threads,
                                 StreamStats* stats);

}  // namespace ppstream::analyze::detail
