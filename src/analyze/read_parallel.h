// Reading many trace files on several threads with the result of reading them one after another.
#pragma once

#include <string>
#include <vector>

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze::detail {

// How many reader threads read_paths uses: PPSTREAM_THREADS when set (a positive integer; 1
// forces the single-threaded reader), else 2, or 1 on a one-core machine. Throws TraceError
// naming the variable and its value when it is not a positive integer.
unsigned reader_threads();

// Reads each file with read_chrome_trace (Chrome traces and communication.json) into a set of
// its own on `threads` threads, at most threads + 1 files ahead of the merge, and merges the
// sets into `set` in list order, so `set` ends up equal to reading the files one after another
// (string ids, rank order, notes, sources, the clock flag; the first error in list order is the
// one thrown). Holds at once: `set` and at most threads + 1 files' own sets.
void read_chrome_files(const std::vector<std::string>& files, TraceSet& set, unsigned threads);

// Appends `part` (one file's set) to `set` as if that file had been read into `set`: strings
// re-interned in `part`'s order, ranks added (duplicate ranks are the reader's error), the first
// 5 out-of-bounds-duration notes of the whole set kept (chrome_reader.cpp names 5).
void merge_file_set(TraceSet&& part, TraceSet& set);

}  // namespace ppstream::analyze::detail
