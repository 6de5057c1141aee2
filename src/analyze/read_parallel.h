// Reading many trace files on several threads with the result of reading them one after another.
#pragma once

#include <string>
#include <vector>

#include "ppstream/analyze/timeline.h"
#include "rank_digest.h"

namespace ppstream::analyze::detail {

// How many reader threads read_paths uses: PPSTREAM_THREADS when set (a positive integer; 1
// forces the single-threaded reader), else 2, or 1 on a one-core machine. Throws TraceError
// naming the variable and its value when it is not a positive integer.
unsigned reader_threads();

// The streaming analysis' step on each file's own set (read_stream.cpp: digest its ranks, free
// their slices), run on the file's reader thread: begin() before the read, then digest() after
// it, or abandon() when the read threw.
class FileDigester {
 public:
  virtual ~FileDigester() = default;
  virtual void begin() = 0;
  virtual void abandon() = 0;
  virtual std::vector<RankDigest> digest(TraceSet& part) = 0;
};

// Reads each file with read_chrome_trace (Chrome traces and communication.json) into a set of
// its own on `threads` threads, at most threads + 1 files ahead of the merge, and merges the
// sets into `set` in list order, so `set` ends up equal to reading the files one after another
// (string ids, rank order, notes, sources, the clock flag; the first error in list order is the
// one thrown). Holds at once: `set` and at most threads + 1 files' own sets.
// With `digester`: every file is read into a set of its own (also on one thread), digested on its
// reader thread, and its digests appended to `digests` in list order with the set's string ids.
void read_chrome_files(const std::vector<std::string>& files, TraceSet& set, unsigned threads,
                       FileDigester* digester = nullptr, std::vector<RankDigest>* digests = nullptr);

// Appends `part` (one file's set) to `set` as if that file had been read into `set`: strings
// re-interned in `part`'s order, ranks added (duplicate ranks are the reader's error), the first
// 5 out-of-bounds-duration notes of the whole set kept (chrome_reader.cpp names 5). Returns the
// map of `part`'s string ids to `set`'s.
std::vector<uint32_t> merge_file_set(TraceSet&& part, TraceSet& set);

// read_paths (readers.h) with each run of JSON inputs read by read_chrome_files with `digester`
// where every input allows it (no Ascend profiler or train run directory: their joins edit slices
// after the last file); else as read_paths. Returns whether the digester was used.
bool read_paths_digested(const std::vector<std::string>& paths, TraceSet& set, unsigned threads,
                         FileDigester& digester, std::vector<RankDigest>& digests);

}  // namespace ppstream::analyze::detail
