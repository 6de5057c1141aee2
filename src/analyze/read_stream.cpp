// The streaming analysis (analysis.h): every rank digested right after its file is read, its
// slices freed, then the cross-rank part over the digests.
#include <algorithm>
#include <set>

#include "analysis.h"
#include "read_parallel.h"

namespace ppstream::analyze::detail {
namespace {

// Digests each file's ranks on its reader thread and frees their slices (the timelines stay in
// the set without them: rank, source, streams, steps). A file's ranks count as resident from the
// start of its read (one, until the read tells how many) until their slices are freed.
class StreamDigester : public FileDigester {
 public:
  StreamDigester(const AnalyzeOptions& opts, ResidentRanks& resident) : opts_(opts), resident_(resident) {}
  void begin() override { resident_.add(1); }
  void abandon() override { resident_.remove(1); }
  std::vector<RankDigest> digest(TraceSet& part) override {
    resident_.add(part.ranks.size());
    resident_.remove(1);
    // A file with one clock may join a set without one: both tolerances until the set is known.
    const DigestOptions d{opts_.step, opts_.chains, tols_for(part.global_clock, false)};
    std::vector<RankDigest> out;
    for (auto& tl : part.ranks) {
      out.push_back(digest_rank(tl, part.strings, d));
      out.back().freed = true;
      // Swapped out, not assigned `{}` (an initializer list keeps the capacity).
      std::vector<Slice>().swap(tl.slices);
      std::vector<WaitSource>().swap(tl.wait_sources);
      resident_.remove(1);
    }
    return out;
  }

 private:
  const AnalyzeOptions& opts_;
  ResidentRanks& resident_;
};

}  // namespace

AnalysisResult analyze_streaming(const std::vector<std::string>& paths, const AnalyzeOptions& opts, unsigned threads,
                                 StreamStats* stats) {
  ResidentRanks resident;
  TraceSet set;
  std::vector<RankDigest> ranks;
  StreamDigester digester(opts, resident);
  read_paths_digested(paths, set, threads, digester, ranks);
  const size_t freed = ranks.size();
  const size_t held = static_cast<size_t>(
      std::count_if(set.ranks.begin(), set.ranks.end(), [](const RankTimeline& tl) { return tl.slices.capacity() > 0; }));
  // The ranks read whole (inputs the digester does not take) are digested now, with the set's
  // tolerance; they stay in memory.
  std::set<int32_t> digested;
  for (const auto& d : ranks) digested.insert(d.rank.v);
  const DigestOptions whole{opts.step, opts.chains, tols_for(set.global_clock, true)};
  for (const auto& tl : set.ranks) {
    if (digested.count(tl.rank.v)) continue;
    resident.add(1);
    ranks.push_back(digest_rank(tl, set.strings, whole));
  }
  std::sort(ranks.begin(), ranks.end(), [](const RankDigest& a, const RankDigest& b) { return a.rank < b.rank; });
  RereadSource source(set, ranks, &resident);
  AnalysisResult r = analyze_digests(set, ranks, source, opts);
  if (stats) *stats = StreamStats{ranks.size(), freed, held, resident.peak(), source.rereads()};
  return r;
}

}  // namespace ppstream::analyze::detail
