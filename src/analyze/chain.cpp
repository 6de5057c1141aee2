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

struct SliceRef {
  const RankTimeline* tl = nullptr;
  size_t index = 0;
  const Slice& s() const { return tl->slices[index]; }
};

// A chain is cut after this many causes (a cycle the seen-set misses, or a pathological trace).
constexpr int kMaxChainDepth = 16;
// Walking back over a stream's queue stops after this many slices queued back to back: a long
// busy stretch, not a wait chain any more.
constexpr size_t kMaxQueued = 1000;

using Seen = std::set<std::pair<const RankTimeline*, size_t>>;  // slices already in the chain

class Walker {
 public:
  // Positions on the common base of `clocks` (analyze.h ChainLink::at_ms).
  Walker(const TraceSet& set, const P2PPairs& pairs, const RankClocks& clocks)
      : set_(set), pairs_(pairs), clocks_(clocks) {
    tol_ = tolerance(set);
  }

  WaitChain walk(SliceRef wait) {
    WaitChain c;
    const Slice& w = wait.s();
    c.rank = wait.tl->rank;
    c.stream = stream_name(wait);
    c.wait_ms = ms(w.dur_ns);
    c.at_ms = at_ms(*wait.tl, w.start_ns);
    const std::string& ev = set_.strings.str(w.event);
    link(c, wait, fmt::format("{} waited {:.3f} ms{}", c.stream, c.wait_ms,
                              ev.empty() ? "" : fmt::format(" for event {}", ev)),
         w.dur_ns);
    Seen seen{{wait.tl, wait.index}};
    explain_end(c, wait, seen, 0);
    return c;
  }

 private:
  std::string stream_name(SliceRef r) const { return r.tl->streams[r.s().stream].name; }
  // " for <event>" of a stream wait that names its event, else "".
  std::string event_suffix(const Slice& s) const {
    const std::string& ev = set_.strings.str(s.event);
    return ev.empty() ? "" : " for " + ev;
  }

  // A link's position is its own slice's start on the common base (RankClocks), whichever rank it is on.
  void link(WaitChain& c, SliceRef r, std::string reason, int64_t delay_ns, std::optional<WaitRule> by = {}) {
    c.links.push_back(ChainLink{r.tl->rank, stream_name(r), set_.strings.str(r.s().name),
                                std::move(reason), at_ms(*r.tl, r.s().start_ns),
                                ms(delay_ns), by});
  }

  std::optional<SliceRef> releaser(const RankTimeline& tl, uint32_t not_stream, int64_t begin,
                                   int64_t t) const {
    auto i = detail::releaser(tl, not_stream, begin, t, tol_);
    if (!i) return std::nullopt;
    return SliceRef{&tl, *i};
  }

  // A stream wait on another stream spanning collective `r` (same start and end): the stream
  // that issued the collective and blocked on it (CommHandle.wait on Ascend).
  std::optional<SliceRef> issuer_wait(SliceRef r) const {
    const Slice& c = r.s();
    for (size_t i = 0; i < r.tl->slices.size(); ++i) {
      const Slice& s = r.tl->slices[i];
      if (s.start_ns > c.start_ns + tol_) break;
      if (s.kind == SliceKind::STREAM_WAIT && s.stream != c.stream && std::llabs(s.start_ns - c.start_ns) <= tol_ &&
          std::llabs(s.end_ns() - c.end_ns()) <= tol_)
        return SliceRef{r.tl, i};
    }
    return std::nullopt;
  }

  std::string issued_by(SliceRef r) const {
    auto w = issuer_wait(r);
    return w ? fmt::format("; rank {}'s {} stream was blocked in it", r.tl->rank.v, stream_name(*w)) : "";
  }

  void explain_end(WaitChain& c, SliceRef waiting, Seen& seen,
                   int depth) {
    if (depth > kMaxChainDepth) {
      c.links.push_back(ChainLink{waiting.tl->rank, stream_name(waiting), "",
                                  fmt::format("chain cut after {} steps", kMaxChainDepth), 0, 0, {}});
      return;
    }
    const Slice& w = waiting.s();
    const WaitRelease found = wait_releaser(*waiting.tl, waiting.index, tol_);
    const WaitRule by = found.rule;
    if (!found.slice || !seen.insert({waiting.tl, *found.slice}).second) {
      c.links.push_back(ChainLink{waiting.tl->rank, stream_name(waiting), "",
                                  by == WaitRule::TIMING ? "no slice on another stream ends with it: cause not in the trace"
                                                         : "no slice of the stream its event was recorded on ends with it: "
                                                           "cause not in the trace",
                                  at_ms(*waiting.tl, w.end_ns()), 0, by});
      return;
    }
    const SliceRef rel{waiting.tl, *found.slice};
    const Slice& s = rel.s();
    const std::string& group = set_.strings.str(s.group);
    switch (s.kind) {
      case SliceKind::STREAM_WAIT:
        link(c, rel, fmt::format("released when {} stopped waiting{}", stream_name(rel), event_suffix(s)),
             s.dur_ns, by);
        explain_end(c, rel, seen, depth + 1);
        return;
      case SliceKind::COLLECTIVE:
        link(c, rel, fmt::format("{} was running a collective{} for {:.3f} ms{}", stream_name(rel),
                                  group.empty() ? "" : " of group " + group, ms(s.dur_ns), issued_by(rel)),
             s.dur_ns, by);
        walk_back(c, rel, seen, depth);
        return;
      case SliceKind::P2P: explain_recv(c, rel, seen, depth, by); return;
      default:
        link(c, rel, fmt::format("{} was busy ({}) for {:.3f} ms", stream_name(rel),
                                  to_string(s.kind), ms(s.dur_ns)),
             s.dur_ns, by);
        walk_back(c, rel, seen, depth);
        return;
    }
  }

  // Why did `r` start when it did? Walk back over the slices queued right before it on its
  // stream; a stream wait among them is explained in turn, a gap means the host issued it.
  void walk_back(WaitChain& c, SliceRef r, Seen& seen, int depth) {
    const RankTimeline& tl = *r.tl;
    int64_t start = r.s().start_ns;
    size_t queued = 0;
    for (size_t guard = 0; guard < tl.slices.size(); ++guard) {
      std::optional<SliceRef> prev;
      for (size_t i = 0; i < tl.slices.size() && tl.slices[i].start_ns <= start; ++i) {
        const Slice& s = tl.slices[i];
        if (s.stream != r.s().stream || s.kind == SliceKind::HOST) continue;
        if (s.end_ns() >= start - tol_ && s.end_ns() <= start + tol_ && s.start_ns < start) prev = SliceRef{&tl, i};
      }
      if (!prev && r.s().kind == SliceKind::COLLECTIVE && queued == 0) {
        // Nothing queued before it on its own (HCCL) stream: follow the stream that issued it.
        auto w = issuer_wait(r);
        if (w && seen.insert({w->tl, w->index}).second) {
          walk_back(c, *w, seen, depth);
          return;
        }
      }
      if (!prev || !seen.insert({prev->tl, prev->index}).second) return;
      if (prev->s().kind == SliceKind::STREAM_WAIT) {
        link(c, *prev, fmt::format("before that (after {} queued slice(s)) rank {}'s {} stream waited {:.3f} ms{}",
                                   queued, tl.rank.v, stream_name(*prev), ms(prev->s().dur_ns), event_suffix(prev->s())),
             prev->s().dur_ns);
        explain_end(c, *prev, seen, depth + 1);
        return;
      }
      if (++queued > kMaxQueued) return;
      start = prev->s().start_ns;
    }
  }

  // The send a receive waited for: of the paired sends of the slice's receive ops, the one
  // issued last on the receiver's clock (first of equals).
  struct LateSend {
    SliceRef send;
    int32_t peer = 0;
    int64_t shift = 0;  // ns from the sender's clock to the receiver's (P2PPairs::clock_shift)
    int64_t late = 0;   // aligned send start − receive start
  };
  std::optional<LateSend> latest_send(SliceRef recv) const {
    const Slice& r = recv.s();
    std::optional<LateSend> best;
    for (size_t k = 0; k < r.p2p.size(); ++k) {
      if (r.p2p[k].dir != P2PDir::RECV) continue;
      auto q = pairs_.peer(*recv.tl, recv.index, k);
      if (!q) continue;
      const int64_t shift = pairs_.clock_shift(q->tl->rank, recv.tl->rank, r.p2p[k].phase);
      const int64_t late = q->s().start_ns + shift - r.start_ns;
      if (!best || late > best->late) best = LateSend{SliceRef{q->tl, q->slice}, q->tl->rank.v, shift, late};
    }
    return best;
  }

  // A P2P receive released the wait: the send it waited for, whether that send was late (by
  // more than the tolerance), and if so why it started when it did.
  void explain_recv(WaitChain& c, SliceRef recv, Seen& seen, int depth, std::optional<WaitRule> by = {}) {
    const Slice& r = recv.s();
    const auto send = latest_send(recv);
    if (!send) {
      link(c, recv, r.p2p.empty() ? "P2P transfer; the trace does not name the peer"
                                  : "receive whose matching send is not in the loaded traces",
           r.dur_ns, by);
      return;
    }
    const int32_t peer = send->peer;
    if (send->late <= tol_) {
      link(c, recv, fmt::format("received from rank {}; its send was issued in time, the transfer "
                                "took {:.3f} ms",
                                peer, ms(r.end_ns() - std::max(r.start_ns, send->send.s().start_ns + send->shift))),
           r.dur_ns, by);
      return;
    }
    link(c, recv, fmt::format("receive from rank {} was ready only when rank {}'s send ran", peer, peer),
         r.dur_ns, by);
    link(c, send->send, fmt::format("rank {}'s send was issued {:.3f} ms after rank {} posted the receive",
                                    peer, ms(send->late), recv.tl->rank.v),
         send->late);
    if (!seen.insert({send->send.tl, send->send.index}).second) return;
    explain_send_start(c, *send, r.start_ns, seen, depth);
  }

  // Why did a late send start when it did? Its own stream was waiting (a stream wait ending at
  // its start), or else the host issued it only after something else finished.
  void explain_send_start(WaitChain& c, const LateSend& send, int64_t posted_ns, Seen& seen, int depth) {
    const RankTimeline& ptl = *send.send.tl;
    const Slice& snd = send.send.s();
    std::optional<SliceRef> before;  // the last slice of the send's stream ending at its start
    for (size_t i = 0; i < ptl.slices.size(); ++i) {
      const Slice& s = ptl.slices[i];
      if (s.start_ns > snd.start_ns) break;
      if (i == send.send.index || s.stream != snd.stream) continue;
      if (s.end_ns() >= snd.start_ns - tol_ && s.end_ns() <= snd.start_ns + tol_) before = SliceRef{&ptl, i};
    }
    if (before && before->s().kind == SliceKind::STREAM_WAIT && seen.insert({before->tl, before->index}).second) {
      link(c, *before, fmt::format("rank {}'s {} stream waited {:.3f} ms{} before the send", send.peer,
                                   stream_name(*before), ms(before->s().dur_ns), event_suffix(before->s())),
           before->s().dur_ns);
      explain_end(c, *before, seen, depth + 1);
      return;
    }
    explain_late_issue(c, send, posted_ns, seen, depth);
  }

  // Issued late by the host: the last thing finishing on another stream of the sender, between
  // the receive's posting (on the sender's clock) and the send's issue, explained by its kind.
  void explain_late_issue(WaitChain& c, const LateSend& send, int64_t posted_ns, Seen& seen, int depth) {
    const RankTimeline& ptl = *send.send.tl;
    const Slice& snd = send.send.s();
    const int32_t peer = send.peer;
    const int64_t off = send.shift;
    auto rel = releaser(ptl, snd.stream, posted_ns - off, snd.start_ns);
    if (!rel || !seen.insert({rel->tl, rel->index}).second) {
      c.links.push_back(ChainLink{ptl.rank, stream_name(send.send), "",
                                  "host issued the send late; nothing in the trace explains it",
                                  at_ms(ptl, snd.start_ns), 0, {}});
      return;
    }
    const Slice& s = rel->s();
    switch (s.kind) {
      case SliceKind::STREAM_WAIT:
        link(c, *rel, fmt::format("rank {}'s {} stream was waiting{} until the send could be issued", peer,
                                  stream_name(*rel), event_suffix(s)),
             s.dur_ns);
        explain_end(c, *rel, seen, depth + 1);
        return;
      case SliceKind::COLLECTIVE: {
        const std::string& g = set_.strings.str(s.group);
        link(c, *rel, fmt::format("rank {}'s {} stream was running a collective{} ({:.3f} ms) until the "
                                  "send could be issued{}",
                                  peer, stream_name(*rel), g.empty() ? "" : " of group " + g, ms(s.dur_ns), issued_by(*rel)),
             s.dur_ns);
        walk_back(c, *rel, seen, depth + 1);
        return;
      }
      case SliceKind::P2P: explain_recv(c, *rel, seen, depth + 1); return;
      default:
        link(c, *rel, fmt::format("rank {}'s {} stream was busy ({}) until the send could be issued", peer,
                                  stream_name(*rel), to_string(s.kind)),
             s.dur_ns);
        walk_back(c, *rel, seen, depth + 1);
        return;
    }
  }

  const TraceSet& set_;
  const P2PPairs& pairs_;
  const RankClocks& clocks_;
  double at_ms(const RankTimeline& tl, int64_t t_ns) const { return clocks_.at_ms(tl.rank, t_ns); }
  int64_t tol_;
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

std::vector<WaitChain> wait_chains(const TraceSet& set, const P2PPairs& pairs, int64_t lo, int64_t hi,
                                   size_t count, const RankClocks& clocks) {
  // Compute-stream waits are the pipeline stalls; a P2P stream idling until its producer's
  // event fires is not, so other streams' waits are used only when compute never waits.
  std::vector<SliceRef> waits, other;
  for (const auto& tl : set.ranks) {
    if (tl.streams.empty()) continue;
    const uint32_t cs = compute_stream(tl);
    for (size_t i = 0; i < tl.slices.size(); ++i) {
      const Slice& s = tl.slices[i];
      if (s.kind == SliceKind::STREAM_WAIT && s.dur_ns > 0 && s.start_ns >= lo && s.start_ns < hi) {
        (s.stream == cs ? waits : other).push_back({&tl, i});
      }
    }
  }
  if (waits.empty()) waits = std::move(other);
  std::sort(waits.begin(), waits.end(), [](const SliceRef& a, const SliceRef& b) {
    return a.s().dur_ns != b.s().dur_ns ? a.s().dur_ns > b.s().dur_ns : a.tl->rank < b.tl->rank;
  });
  if (waits.size() > count) waits.resize(count);
  Walker walker(set, pairs, clocks);
  std::vector<WaitChain> out;
  for (const auto& w : waits) out.push_back(walker.walk(w));
  return out;
}

}  // namespace ppstream::analyze::detail
