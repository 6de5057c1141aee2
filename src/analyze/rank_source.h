// Full rank timelines for the parts of the analysis that walk them after every rank is read (the
// wait chain, chain.h): from a set held in memory, or re-read from the rank's file when its
// slices were freed after its digest (rank_digest.h; docs/analyze.md "What bounds memory").
#pragma once

#include <atomic>
#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "rank_digest.h"

namespace ppstream::analyze::detail {

// One rank's timeline and the string table its ids index; `keep` holds a re-read file's set
// alive while the view is used.
struct RankView {
  const RankTimeline* tl = nullptr;
  const StringTable* strings = nullptr;
  std::shared_ptr<const TraceSet> keep;
};

class RankSource {
 public:
  virtual ~RankSource() = default;
  // Rank `r`'s full timeline; throws TraceError when it cannot be had (a re-read file changed).
  virtual RankView view(Rank r) = 0;
};

// How many ranks' slices a streaming analysis holds at once (read_stream.cpp counts the ranks of
// each file from the start of its read until its digests are made, and each re-read rank while a
// view of it or the cache holds it). Thread-safe.
class ResidentRanks {
 public:
  void add(size_t n);
  void remove(size_t n);
  size_t now() const { return now_.load(); }
  size_t peak() const { return peak_.load(); }

 private:
  std::atomic<size_t> now_{0}, peak_{0};
};

// The timelines of a set in memory (every rank with its slices).
class SetSource : public RankSource {
 public:
  explicit SetSource(const TraceSet& set) : set_(set) {}
  RankView view(Rank r) override;

 private:
  const TraceSet& set_;
};

// Ranks whose slices were freed (RankDigest::freed) are re-read from their file, the last
// kCachedFiles files kept; the other ranks come from `set`. A re-read rank must have as many
// slices as its digest, else the file changed during the analysis (TraceError naming it).
class RereadSource : public RankSource {
 public:
  static constexpr size_t kCachedFiles = 2;
  RereadSource(const TraceSet& set, const std::vector<RankDigest>& ranks, ResidentRanks* resident)
      : set_(set), ranks_(ranks), resident_(resident) {}
  RankView view(Rank r) override;
  size_t rereads() const { return rereads_; }

 private:
  std::shared_ptr<const TraceSet> read(const RankDigest& d);
  const TraceSet& set_;
  const std::vector<RankDigest>& ranks_;
  ResidentRanks* resident_;
  std::list<std::pair<std::string, std::shared_ptr<const TraceSet>>> cache_;  // most recent first
  size_t rereads_ = 0;
};

}  // namespace ppstream::analyze::detail
