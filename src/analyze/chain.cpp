// Walks a stream wait back across ranks: wait → the slice whose end released it → for a P2P
// receive, the peer's matching send (per channel, in order) → why that send started late → …
#include "chain.h"
#include "ppstream/program/streams.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

namespace ppstream::analyze::detail {
namespace {

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

int priority(SliceKind k) {
  switch (k) {
    case SliceKind::P2P: return 5;
    case SliceKind::COLLECTIVE: return 4;
    case SliceKind::STREAM_WAIT: return 3;
    case SliceKind::COMPUTE: return 2;
    default: return 1;
  }
}

// A slice of a rank's full timeline (the view keeps a re-read file alive while it is used).
struct SliceRef {
  RankView v;
  size_t index = 0;
  const RankTimeline& tl() const { return *v.tl; }
  const Slice& s() const { return v.tl->slices[index]; }
  const std::string& str(uint32_t id) const { return v.strings->str(id); }
};

// A chain is cut after this many causes (a cycle the seen-set misses, or a pathological trace).
constexpr int kMaxChainDepth = 16;
// Walking back over a stream's queue stops after this many slices queued back to back: a long
// busy stretch, not a wait chain any more.
constexpr size_t kMaxQueued = 1000;

using Seen = std::set<std::pair<int32_t, size_t>>;  // slices already in the chain: (rank, index)
std::pair<int32_t, size_t> key(const SliceRef& r) { return {r.tl().rank.v, r.index}; }

class Walker {
 public:
  // Positions on the common base of `clocks` (analyze.h ChainLink::at_ms).
  Walker(const P2PPairs& pairs, const RankClocks& clocks, int64_t tol, RankSource& source)
      : pairs_(pairs), clocks_(clocks), source_(source), tol_(tol) {}

  // `wait` by value: the walk's first step takes it over, so its rank is released when done with.
  WaitChain walk(SliceRef wait) {
    WaitChain c;
    const Slice& w = wait.s();
    c.rank = wait.tl().rank;
    c.stream = stream_name(wait);
    c.wait_ms = ms(w.dur_ns);
    c.at_ms = at_ms(wait.tl(), w.start_ns);
    const std::string& ev = wait.str(w.event);
    link(c, wait, fmt::format("{} waited {:.3f} ms{}", c.stream, c.wait_ms,
                              ev.empty() ? "" : fmt::format(" for event {}", ev)),
         w.dur_ns);
    Seen seen{key(wait)};
    // Each explanation names the next one (a tail step) instead of recursing, so only the current
    // step's slices (and the source's cache) are held while the chain crosses ranks.
    Next next = end(std::move(wait), 0);
    while (next) {
      const Step step = std::move(*next);
      next.reset();
      next = run(c, step, seen);
    }
    return c;
  }

 private:
  // The send a receive waited for: of the paired sends of the slice's receive ops, the one
  // issued last on the receiver's clock (first of equals).
  struct LateSend {
    SliceRef send;
    int32_t peer = 0;
    int64_t shift = 0;  // ns from the sender's clock to the receiver's (P2PPairs::clock_shift)
    int64_t late = 0;   // aligned send start − receive start
  };
  // What to explain next.
  struct Step {
    enum class Kind : uint8_t { END, WALK_BACK, RECV, SEND_START } kind;
    SliceRef ref;                 // END: a stream wait; WALK_BACK: a slice; RECV: a receive
    int depth = 0;
    std::optional<WaitRule> by;   // RECV: the rule that attributed the wait it released
    std::optional<LateSend> send; // SEND_START: the late send
    int64_t posted_ns = 0;        // SEND_START: when the receive was posted (receiver's clock)
  };
  using Next = std::optional<Step>;

  Next run(WaitChain& c, const Step& s, Seen& seen) {
    switch (s.kind) {
      case Step::Kind::END: return explain_end(c, s.ref, seen, s.depth);
      case Step::Kind::WALK_BACK: return walk_back(c, s.ref, seen, s.depth);
      case Step::Kind::RECV: return explain_recv(c, s.ref, seen, s.depth, s.by);
      case Step::Kind::SEND_START: return explain_send_start(c, *s.send, s.posted_ns, seen, s.depth);
    }
    return {};
  }
  static Step end(SliceRef r, int depth) { return Step{Step::Kind::END, std::move(r), depth, {}, {}, 0}; }
  static Step back(SliceRef r, int depth) { return Step{Step::Kind::WALK_BACK, std::move(r), depth, {}, {}, 0}; }
  static Step recv(SliceRef r, int depth, std::optional<WaitRule> by) {
    return Step{Step::Kind::RECV, std::move(r), depth, by, {}, 0};
  }

  std::string stream_name(const SliceRef& r) const { return r.tl().streams[r.s().stream].name; }
  // " for <event>" of a stream wait that names its event, else "".
  std::string event_suffix(const SliceRef& r) const {
    const std::string& ev = r.str(r.s().event);
    return ev.empty() ? "" : " for " + ev;
  }
  SliceRef on(const SliceRef& r, size_t index) const { return SliceRef{r.v, index}; }

  // A link's position is its own slice's start on the common base (RankClocks), whichever rank it is on.
  void link(WaitChain& c, const SliceRef& r, std::string reason, int64_t delay_ns, std::optional<WaitRule> by = {}) {
    c.links.push_back(ChainLink{r.tl().rank, stream_name(r), r.str(r.s().name), std::move(reason),
                                at_ms(r.tl(), r.s().start_ns), ms(delay_ns), by});
  }

  std::optional<SliceRef> releaser(const SliceRef& on_rank, uint32_t not_stream, int64_t begin, int64_t t) const {
    auto i = detail::releaser(on_rank.tl(), not_stream, begin, t, tol_);
    if (!i) return std::nullopt;
    return on(on_rank, *i);
  }

  // A stream wait on another stream spanning collective `r` (same start and end): the stream
  // that issued the collective and blocked on it (CommHandle.wait on Ascend).
  std::optional<SliceRef> issuer_wait(const SliceRef& r) const {
    const Slice& c = r.s();
    const auto& slices = r.tl().slices;
    for (size_t i = 0; i < slices.size(); ++i) {
      const Slice& s = slices[i];
      if (s.start_ns > c.start_ns + tol_) break;
      if (s.kind == SliceKind::STREAM_WAIT && s.stream != c.stream && std::llabs(s.start_ns - c.start_ns) <= tol_ &&
          std::llabs(s.end_ns() - c.end_ns()) <= tol_)
        return on(r, i);
    }
    return std::nullopt;
  }

  std::string issued_by(const SliceRef& r) const {
    auto w = issuer_wait(r);
    return w ? fmt::format("; rank {}'s {} stream was blocked in it", r.tl().rank.v, stream_name(*w)) : "";
  }

  Next explain_end(WaitChain& c, const SliceRef& waiting, Seen& seen, int depth) {
    if (depth > kMaxChainDepth) {
      c.links.push_back(ChainLink{waiting.tl().rank, stream_name(waiting), "",
                                  fmt::format("chain cut after {} steps", kMaxChainDepth), 0, 0, {}});
      return {};
    }
    const Slice& w = waiting.s();
    const WaitRelease found = wait_releaser(waiting.tl(), waiting.index, tol_);
    const WaitRule by = found.rule;
    if (!found.slice || !seen.insert({waiting.tl().rank.v, *found.slice}).second) {
      c.links.push_back(ChainLink{waiting.tl().rank, stream_name(waiting), "",
                                  by == WaitRule::TIMING ? "no slice on another stream ends with it: cause not in the trace"
                                                         : "no slice of the stream its event was recorded on ends with it: "
                                                           "cause not in the trace",
                                  at_ms(waiting.tl(), w.end_ns()), 0, by});
      return {};
    }
    const SliceRef rel = on(waiting, *found.slice);
    const Slice& s = rel.s();
    const std::string& group = rel.str(s.group);
    switch (s.kind) {
      case SliceKind::STREAM_WAIT:
        link(c, rel, fmt::format("released when {} stopped waiting{}", stream_name(rel), event_suffix(rel)),
             s.dur_ns, by);
        return end(rel, depth + 1);
      case SliceKind::COLLECTIVE:
        link(c, rel, fmt::format("{} was running a collective{} for {:.3f} ms{}", stream_name(rel),
                                  group.empty() ? "" : " of group " + group, ms(s.dur_ns), issued_by(rel)),
             s.dur_ns, by);
        return back(rel, depth);
      case SliceKind::P2P: return recv(rel, depth, by);
      default:
        link(c, rel, fmt::format("{} was busy ({}) for {:.3f} ms", stream_name(rel),
                                  to_string(s.kind), ms(s.dur_ns)),
             s.dur_ns, by);
        return back(rel, depth);
    }
  }

  // Why did `r` start when it did? Walk back over the slices queued right before it on its
  // stream; a stream wait among them is explained in turn, a gap means the host issued it.
  Next walk_back(WaitChain& c, const SliceRef& r, Seen& seen, int depth) {
    const RankTimeline& tl = r.tl();
    int64_t start = r.s().start_ns;
    size_t queued = 0;
    for (size_t guard = 0; guard < tl.slices.size(); ++guard) {
      std::optional<size_t> prev_i;
      for (size_t i = 0; i < tl.slices.size() && tl.slices[i].start_ns <= start; ++i) {
        const Slice& s = tl.slices[i];
        if (s.stream != r.s().stream || s.kind == SliceKind::HOST) continue;
        if (s.end_ns() >= start - tol_ && s.end_ns() <= start + tol_ && s.start_ns < start) prev_i = i;
      }
      if (!prev_i && r.s().kind == SliceKind::COLLECTIVE && queued == 0) {
        // Nothing queued before it on its own (HCCL) stream: follow the stream that issued it.
        auto w = issuer_wait(r);
        if (w && seen.insert(key(*w)).second) return back(*w, depth);
      }
      if (!prev_i || !seen.insert({tl.rank.v, *prev_i}).second) return {};
      const SliceRef prev = on(r, *prev_i);
      if (prev.s().kind == SliceKind::STREAM_WAIT) {
        link(c, prev, fmt::format("before that (after {} queued slice(s)) rank {}'s {} stream waited {:.3f} ms{}",
                                  queued, tl.rank.v, stream_name(prev), ms(prev.s().dur_ns), event_suffix(prev)),
             prev.s().dur_ns);
        return end(prev, depth + 1);
      }
      if (++queued > kMaxQueued) return {};
      start = prev.s().start_ns;
    }
    return {};
  }

  std::optional<LateSend> latest_send(const SliceRef& recv) const {
    const Slice& r = recv.s();
    std::optional<OpRef> best_op;
    int64_t best_shift = 0, best_late = 0;
    for (size_t k = 0; k < r.p2p.size(); ++k) {
      if (r.p2p[k].dir != P2PDir::RECV) continue;
      auto q = pairs_.peer(recv.tl().rank, recv.index, k);
      if (!q) continue;
      const int64_t shift = pairs_.clock_shift(q->rank->rank, recv.tl().rank, r.p2p[k].phase);
      const int64_t late = q->s().start_ns + shift - r.start_ns;
      if (!best_op || late > best_late) {
        best_op = q;
        best_shift = shift;
        best_late = late;
      }
    }
    if (!best_op) return std::nullopt;
    const Rank peer = best_op->rank->rank;
    return LateSend{SliceRef{source_.view(peer), best_op->s().index}, peer.v, best_shift, best_late};
  }

  // A P2P receive released the wait: the send it waited for, whether that send was late (by
  // more than the tolerance), and if so why it started when it did.
  Next explain_recv(WaitChain& c, const SliceRef& recv, Seen& seen, int depth, std::optional<WaitRule> by) {
    const Slice& r = recv.s();
    const auto send = latest_send(recv);
    if (!send) {
      link(c, recv, r.p2p.empty() ? "P2P transfer; the trace does not name the peer"
                                  : "receive whose matching send is not in the loaded traces",
           r.dur_ns, by);
      return {};
    }
    const int32_t peer = send->peer;
    if (send->late <= tol_) {
      link(c, recv, fmt::format("received from rank {}; its send was issued in time, the transfer "
                                "took {:.3f} ms",
                                peer, ms(r.end_ns() - std::max(r.start_ns, send->send.s().start_ns + send->shift))),
           r.dur_ns, by);
      return {};
    }
    link(c, recv, fmt::format("receive from rank {} was ready only when rank {}'s send ran", peer, peer),
         r.dur_ns, by);
    link(c, send->send, fmt::format("rank {}'s send was issued {:.3f} ms after rank {} posted the receive",
                                    peer, ms(send->late), recv.tl().rank.v),
         send->late);
    if (!seen.insert(key(send->send)).second) return {};
    return Step{Step::Kind::SEND_START, {}, depth, {}, std::move(send), r.start_ns};
  }

  // Why did a late send start when it did? Its own stream was waiting (a stream wait ending at
  // its start), or else the host issued it only after something else finished.
  Next explain_send_start(WaitChain& c, const LateSend& send, int64_t posted_ns, Seen& seen, int depth) {
    const RankTimeline& ptl = send.send.tl();
    const Slice& snd = send.send.s();
    std::optional<size_t> before_i;  // the last slice of the send's stream ending at its start
    for (size_t i = 0; i < ptl.slices.size(); ++i) {
      const Slice& s = ptl.slices[i];
      if (s.start_ns > snd.start_ns) break;
      if (i == send.send.index || s.stream != snd.stream) continue;
      if (s.end_ns() >= snd.start_ns - tol_ && s.end_ns() <= snd.start_ns + tol_) before_i = i;
    }
    if (before_i && ptl.slices[*before_i].kind == SliceKind::STREAM_WAIT && seen.insert({ptl.rank.v, *before_i}).second) {
      const SliceRef before = on(send.send, *before_i);
      link(c, before, fmt::format("rank {}'s {} stream waited {:.3f} ms{} before the send", send.peer,
                                  stream_name(before), ms(before.s().dur_ns), event_suffix(before)),
           before.s().dur_ns);
      return end(before, depth + 1);
    }
    return explain_late_issue(c, send, posted_ns, seen, depth);
  }

  // Issued late by the host: the last thing finishing on another stream of the sender, between
  // the receive's posting (on the sender's clock) and the send's issue, explained by its kind.
  Next explain_late_issue(WaitChain& c, const LateSend& send, int64_t posted_ns, Seen& seen, int depth) {
    const RankTimeline& ptl = send.send.tl();
    const Slice& snd = send.send.s();
    const int32_t peer = send.peer;
    const int64_t off = send.shift;
    auto rel = releaser(send.send, snd.stream, posted_ns - off, snd.start_ns);
    if (!rel || !seen.insert(key(*rel)).second) {
      c.links.push_back(ChainLink{ptl.rank, stream_name(send.send), "",
                                  "host issued the send late; nothing in the trace explains it",
                                  at_ms(ptl, snd.start_ns), 0, {}});
      return {};
    }
    const Slice& s = rel->s();
    switch (s.kind) {
      case SliceKind::STREAM_WAIT:
        link(c, *rel, fmt::format("rank {}'s {} stream was waiting{} until the send could be issued", peer,
                                  stream_name(*rel), event_suffix(*rel)),
             s.dur_ns);
        return end(*rel, depth + 1);
      case SliceKind::COLLECTIVE: {
        const std::string& g = rel->str(s.group);
        link(c, *rel, fmt::format("rank {}'s {} stream was running a collective{} ({:.3f} ms) until the "
                                  "send could be issued{}",
                                  peer, stream_name(*rel), g.empty() ? "" : " of group " + g, ms(s.dur_ns), issued_by(*rel)),
             s.dur_ns);
        return back(*rel, depth + 1);
      }
      case SliceKind::P2P: return recv(*rel, depth + 1, {});
      default:
        link(c, *rel, fmt::format("rank {}'s {} stream was busy ({}) until the send could be issued", peer,
                                  stream_name(*rel), to_string(s.kind)),
             s.dur_ns);
        return back(*rel, depth + 1);
    }
  }

  const P2PPairs& pairs_;
  const RankClocks& clocks_;
  RankSource& source_;
  double at_ms(const RankTimeline& tl, int64_t t_ns) const { return clocks_.at_ms(tl.rank, t_ns); }
  const int64_t tol_;
};

}  // namespace

uint32_t compute_stream(const RankTimeline& tl) {
  for (size_t i = 0; i < tl.streams.size(); ++i) {
    if (tl.streams[i].name == streams::name_of(streams::kCompute)) return static_cast<uint32_t>(i);
  }
  std::vector<int64_t> busy(tl.streams.size(), 0);
  for (const auto& s : tl.slices) {
    if (s.kind == SliceKind::COMPUTE) busy[s.stream] += s.dur_ns;
  }
  return static_cast<uint32_t>(std::max_element(busy.begin(), busy.end()) - busy.begin());
}

int64_t tolerance(const TraceSet& set) { return set.global_clock ? kGlobalClockTolNs : kPerRankClockTolNs; }

namespace {

// The slice ending last in [begin, t + tol] on the streams `on` accepts (ties within tol: P2P >
// collective > stream wait > compute).
template <typename OnStream>
std::optional<size_t> last_ending(const RankTimeline& tl, OnStream on, int64_t begin, int64_t t, int64_t tol) {
  std::optional<size_t> best;
  for (size_t i = 0; i < tl.slices.size(); ++i) {
    const Slice& s = tl.slices[i];
    if (s.start_ns > t + tol) break;
    if (!on(s.stream) || s.kind == SliceKind::HOST) continue;
    int64_t e = s.end_ns();
    if (e > t + tol || e < begin) continue;
    if (!best) {
      best = i;
      continue;
    }
    int64_t be = tl.slices[*best].end_ns();
    bool later = e > be + tol;
    bool tie = !later && e >= be - tol;
    if (later || (tie && priority(s.kind) > priority(tl.slices[*best].kind))) best = i;
  }
  return best;
}

// HTA's rule (HTA PR #121): the last device slice launched on the recorded stream before the
// cudaEventRecord call; absent when no slice of that stream carries a launch before it.
std::optional<size_t> recorded_slice(const RankTimeline& tl, const WaitSource& ws) {
  std::optional<size_t> best;
  for (size_t i = 0; i < tl.slices.size(); ++i) {
    const Slice& s = tl.slices[i];
    if (s.stream != ws.stream || s.kind == SliceKind::HOST || !s.launch_ns || *s.launch_ns > *ws.record_ns) continue;
    if (!best || *s.launch_ns >= *tl.slices[*best].launch_ns) best = i;
  }
  return best;
}

}  // namespace

std::optional<size_t> releaser(const RankTimeline& tl, uint32_t not_stream, int64_t begin, int64_t t,
                               int64_t tol) {
  return last_ending(tl, [not_stream](uint32_t st) { return st != not_stream; }, begin, t, tol);
}

WaitRelease wait_releaser(const RankTimeline& tl, size_t wait, int64_t tol) {
  const Slice& w = tl.slices[wait];
  if (!w.wait_source) return {releaser(tl, w.stream, w.start_ns, w.end_ns(), tol), WaitRule::TIMING};
  const WaitSource& ws = tl.wait_sources[*w.wait_source];
  if (ws.record_ns) {
    if (auto rec = recorded_slice(tl, ws)) return {rec, WaitRule::RECORD};
  }
  return {last_ending(tl, [&ws](uint32_t st) { return st == ws.stream; }, w.start_ns, w.end_ns(), tol),
          WaitRule::STREAM};
}

std::vector<WaitChain> wait_chains(const std::vector<RankDigest>& ranks, const P2PPairs& pairs, int64_t lo,
                                   int64_t hi, size_t count, const RankClocks& clocks, int64_t tol,
                                   RankSource& source) {
  // Compute-stream waits are the pipeline stalls; a P2P stream idling until its producer's
  // event fires is not, so other streams' waits are used only when compute never waits.
  struct Candidate {
    Rank rank;
    const WaitCandidate* w;
  };
  std::vector<Candidate> waits, other;
  for (const auto& d : ranks) {
    for (const auto& w : d.waits) {
      if (w.start_ns >= lo && w.start_ns < hi) (w.on_compute ? waits : other).push_back({d.rank, &w});
    }
  }
  if (waits.empty()) waits = std::move(other);
  std::sort(waits.begin(), waits.end(), [](const Candidate& a, const Candidate& b) {
    if (a.w->dur_ns != b.w->dur_ns) return a.w->dur_ns > b.w->dur_ns;
    return a.rank != b.rank ? a.rank < b.rank : a.w->index < b.w->index;
  });
  if (waits.size() > count) waits.resize(count);
  Walker walker(pairs, clocks, tol, source);
  std::vector<WaitChain> out;
  for (const auto& w : waits) out.push_back(walker.walk(SliceRef{source.view(w.rank), w.w->index}));
  return out;
}

}  // namespace ppstream::analyze::detail
