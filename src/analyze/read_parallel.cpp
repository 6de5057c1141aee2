// Parallel reading of trace files, merged in list order (read_parallel.h).
#include "read_parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "chrome_reader.h"
#include "ppstream/analyze/readers.h"

namespace ppstream::analyze::detail {

unsigned reader_threads() {
  const char* env = std::getenv("PPSTREAM_THREADS");
  if (env == nullptr) return std::thread::hardware_concurrency() > 1 ? 2u : 1u;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (*env == '\0' || *end != '\0' || n < 1 || n > 1024) {
    throw TraceError(fmt::format("PPSTREAM_THREADS={}: expected a positive integer (1 reads on one thread)", env));
  }
  return static_cast<unsigned>(n);
}

std::vector<uint32_t> merge_file_set(TraceSet&& part, TraceSet& set) {
  std::vector<uint32_t> id(part.strings.size());
  for (size_t i = 0; i < id.size(); ++i) id[i] = set.strings.intern(part.strings.str(static_cast<uint32_t>(i)));
  // The reader names the first kNamedDroppedEvents dropped events of the set, during the scan,
  // before any other note of the file: `part`'s first min(dropped, kNamed) notes are those.
  const auto named_here = static_cast<size_t>(std::min(part.dropped_events, kNamedDroppedEvents));
  const auto still_named = static_cast<size_t>(std::clamp<int64_t>(kNamedDroppedEvents - set.dropped_events, 0,
                                                                   static_cast<int64_t>(named_here)));
  for (size_t i = 0; i < part.notes.size(); ++i) {
    if (i < still_named || i >= named_here) set.notes.push_back(std::move(part.notes[i]));
  }
  set.dropped_events += part.dropped_events;
  if (part.chrome_files > 0) {
    set.global_clock = set.chrome_files == 0 ? part.global_clock : (set.global_clock && part.global_clock);
    set.chrome_files += part.chrome_files;
  }
  set.sources.insert(set.sources.end(), part.sources.begin(), part.sources.end());
  set.producer_metrics.insert(set.producer_metrics.end(), part.producer_metrics.begin(), part.producer_metrics.end());
  set.step_trace.insert(set.step_trace.end(), part.step_trace.begin(), part.step_trace.end());
  set.comm_ops.insert(set.comm_ops.end(), part.comm_ops.begin(), part.comm_ops.end());
  set.comm_links.insert(set.comm_links.end(), part.comm_links.begin(), part.comm_links.end());
  set.parallel_groups.insert(set.parallel_groups.end(), part.parallel_groups.begin(), part.parallel_groups.end());
  for (auto& tl : part.ranks) {
    for (auto& s : tl.slices) {
      s.name = id[s.name];
      s.group = id[s.group];
      s.event = id[s.event];
    }
    const std::string source = tl.source;
    add_rank(set, std::move(tl), source);
  }
  std::sort(set.ranks.begin(), set.ranks.end(),
            [](const RankTimeline& a, const RankTimeline& b) { return a.rank < b.rank; });
  return id;
}

namespace {

// One file's result: its own set (and its ranks' digests when streaming), or the error reading it threw.
struct FileResult {
  std::unique_ptr<TraceSet> set;
  std::vector<RankDigest> digests;
  std::exception_ptr error;
  bool done = false;
};

// Reads one file into a set of its own, digested when `digester` is given.
FileResult read_one(const std::string& path, FileDigester* digester) {
  FileResult r;
  if (digester) digester->begin();
  try {
    r.set = std::make_unique<TraceSet>();
    read_chrome_trace(path, *r.set);
  } catch (...) {
    if (digester) digester->abandon();
    r.set.reset();
    r.error = std::current_exception();
  }
  if (r.set && digester) r.digests = digester->digest(*r.set);
  r.done = true;
  return r;
}

// Merges one file's result into `set` (read_chrome_files), throwing its error.
void merge_result(FileResult&& r, TraceSet& set, std::vector<RankDigest>* digests) {
  if (r.error) std::rethrow_exception(r.error);
  const auto id = merge_file_set(std::move(*r.set), set);
  if (!digests) return;
  for (auto& d : r.digests) {
    remap_strings(d, id);
    digests->push_back(std::move(d));
  }
}

// Workers claim files in list order, at most `window` ahead of the merge; the caller's thread
// merges each file as soon as it and every file before it are read.
class ParallelRead {
 public:
  ParallelRead(const std::vector<std::string>& files, unsigned threads, FileDigester* digester)
      : files_(files), results_(files.size()), window_(threads + 1), digester_(digester) {
    for (unsigned t = 0; t < threads; ++t) workers_.emplace_back([this] { work(); });
  }
  ~ParallelRead() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }

  void merge_all(TraceSet& set, std::vector<RankDigest>* digests) {
    for (size_t i = 0; i < files_.size(); ++i) {
      FileResult r;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return results_[i].done; });
        r = std::move(results_[i]);
        merged_ = i + 1;
      }
      cv_.notify_all();
      merge_result(std::move(r), set, digests);
    }
  }

 private:
  void work() {
    for (;;) {
      size_t i = 0;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || (next_ < files_.size() && next_ < merged_ + window_); });
        if (stop_ || next_ >= files_.size()) return;
        i = next_++;
      }
      FileResult r = read_one(files_[i], digester_);
      {
        std::lock_guard<std::mutex> lock(mu_);
        results_[i] = std::move(r);
      }
      cv_.notify_all();
    }
  }

  const std::vector<std::string>& files_;
  std::vector<FileResult> results_;
  const size_t window_;
  FileDigester* const digester_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t next_ = 0, merged_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

void read_chrome_files(const std::vector<std::string>& files, TraceSet& set, unsigned threads,
                       FileDigester* digester, std::vector<RankDigest>* digests) {
  threads = std::min<unsigned>(threads, static_cast<unsigned>(files.size()));
  if (threads <= 1) {
    for (const auto& f : files) {
      if (digester) merge_result(read_one(f, digester), set, digests);
      else read_chrome_trace(f, set);
    }
    return;
  }
  ParallelRead read(files, threads, digester);
  read.merge_all(set, digests);
}

}  // namespace ppstream::analyze::detail
