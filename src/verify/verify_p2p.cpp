// Rules `p2p-fifo` (per channel, the k-th send pairs with the k-th recv carrying the mirrored
// microbatch and stage; ops name the peer that holds the neighbouring stage) and
// `batch-shape` (the ops one batch exchanges with a peer sit in one batch there).
#include <algorithm>

#include <fmt/format.h>

#include "verify/report.h"

namespace ppstream::verify_detail {
namespace {

using engine::ChannelList;
using engine::Topology;

// Index (program, instruction) of the op's BATCH.
std::pair<int32_t, int32_t> where(const Topology& t, int32_t op) {
  const int32_t g = t.op_instr[op];
  const int32_t p = t.prog_of_global(g);
  return {p, g - t.instr_base[p]};
}

const char* opposite_kind(const ChannelList& l) {
  return l.forward ? (l.send ? "RECV_F" : "SEND_F") : (l.send ? "RECV_B" : "SEND_B");
}
const char* own_kind(const ChannelList& l) {
  return l.forward ? (l.send ? "SEND_F" : "RECV_F") : (l.send ? "SEND_B" : "RECV_B");
}

void check_channel(const Topology& t, int32_t prog, const ChannelList& mine, const ChannelList* theirs, Report& rep) {
  const Rank me = rep.rank(prog), peer = rep.rank(mine.peer_prog);
  const Rank sender = mine.send ? me : peer, receiver = mine.send ? peer : me;
  const std::string channel = fmt::format("channel r{}->r{} {}", sender.v, receiver.v, mine.forward ? "F" : "B");
  const size_t theirs_n = theirs ? theirs->ops.size() : 0;
  const size_t n = std::min(mine.ops.size(), theirs_n);
  if (mine.send) {  // contents are compared once, from the send side
    size_t bad = 0;
    size_t first_bad = 0;
    for (size_t k = 0; k < n; ++k) {
      const P2POp& s = t.op(mine.ops[k]);
      const P2POp& r = t.op(theirs->ops[k]);
      if (r.mb == s.mb && r.stage.v == mirror_of(s, Rank{}).stage.v) continue;
      if (bad++ == 0) first_bad = k;
    }
    if (bad) {
      const auto [rp, ri] = where(t, theirs->ops[first_bad]);
      const auto [sp, si] = where(t, mine.ops[first_bad]);
      const P2POp& s = t.op(mine.ops[first_bad]);
      rep.add("p2p-fifo", rp, ri,
              fmt::format("{}: its {} is the {} op on {} and pairs with {} in {}; expected {} mb{} s{}{}", rep.op(rp, ri),
                          to_text(t.op(theirs->ops[first_bad])), ordinal(first_bad + 1), channel, to_text(s),
                          rep.remote(sp, si), opposite_kind(mine), s.mb.v, mirror_of(s, Rank{}).stage.v,
                          bad > 1 ? fmt::format(" ({} more mismatched pairs on this channel)", bad - 1) : ""));
    }
  }
  if (mine.ops.size() > theirs_n) {
    const auto [p, i] = where(t, mine.ops[theirs_n]);
    rep.add("p2p-fifo", p, i,
            fmt::format("{}: its {} is the {} {} on {}, but r{} posts only {} {} from r{}", rep.op(p, i),
                        to_text(t.op(mine.ops[theirs_n])), ordinal(theirs_n + 1), own_kind(mine), channel, peer.v,
                        theirs_n, opposite_kind(mine), me.v));
  }
}

// The op's peer must hold the neighbouring stage (and, in an expanded set, the same DP index).
void check_peer(const Topology& t, int32_t prog, int32_t index, const P2POp& op, Report& rep) {
  const World& w = t.set->world;
  const Program& p = t.program(prog);
  const int32_t stages = w.pp * w.vpp;
  if (op.stage.v < 0 || op.stage.v >= stages || pp_rank_of_stage(op.stage, w) != p.pp_rank) {
    rep.add("p2p-fifo", prog, index,
            fmt::format("{}: {} names stage s{}, which is not a stage of r{} (PP rank {})", rep.op(prog, index),
                        to_text(op), op.stage.v, p.rank.v, p.pp_rank));
    return;
  }
  const int32_t next = mirror_of(op, Rank{}).stage.v;
  if (next < 0 || next >= stages) {
    rep.add("p2p-fifo", prog, index,
            fmt::format("{}: {} would go to stage s{}, outside 0..{}", rep.op(prog, index), to_text(op), next,
                        stages - 1));
    return;
  }
  const int32_t peer_pp = pp_rank_of_stage(Stage{next}, w);
  if (peer_pp == p.pp_rank) {
    rep.add("p2p-fifo", prog, index,
            fmt::format("{}: {} goes to stage s{}, which lives on this rank too ({} placement): a local transfer "
                        "has no P2P op (docs/semantics.md \"Placement\")",
                        rep.op(prog, index), to_text(op), next, to_string(w.placement)));
    return;
  }
  const int32_t want = w.expanded ? peer_pp * w.dp() + p.rank.v % w.dp() : peer_pp;
  if (op.peer.v != want)
    rep.add("p2p-fifo", prog, index,
            fmt::format("{}: {} names r{}, but stage s{} of this replica lives on r{}", rep.op(prog, index),
                        to_text(op), op.peer.v, next, want));
}

}  // namespace

void check_p2p_fifo(const Topology& t, Report& rep) {
  for (int32_t p = 0; p < t.programs(); ++p) {
    if (t.skip(p)) continue;
    for (const ChannelList& l : t.channels[p]) {
      if (t.skip(l.peer_prog)) continue;
      const ChannelList* opposite = nullptr;
      for (const ChannelList& r : t.channels[l.peer_prog])
        if (r.peer_prog == p && r.forward == l.forward && r.send != l.send) opposite = &r;
      check_channel(t, p, l, opposite, rep);
    }
    const auto& instrs = t.program(p).instrs;
    for (size_t i = 0; i < instrs.size(); ++i)
      for (const P2POp& op : instrs[i].p2p)
        if (t.prog_of_rank(op.peer) != engine::kNone) check_peer(t, p, static_cast<int32_t>(i), op, rep);
  }
}

void check_batch_shape(const Topology& t, Report& rep) {
  for (int32_t p = 0; p < t.programs(); ++p) {
    if (t.skip(p)) continue;
    const auto& instrs = t.program(p).instrs;
    for (size_t i = 0; i < instrs.size(); ++i) {
      const Instr& in = instrs[i];
      if (in.op != OpKind::BATCH) continue;
      const int32_t first = t.first_op(t.global(p, static_cast<int32_t>(i)));
      std::vector<Rank> peers;
      for (const P2POp& op : in.p2p)
        if (std::find(peers.begin(), peers.end(), op.peer) == peers.end()) peers.push_back(op.peer);
      for (Rank q : peers) {
        std::vector<int32_t> mirrors;  // distinct mirror batches (global ids), in op order
        for (size_t k = 0; k < in.p2p.size(); ++k) {
          if (in.p2p[k].peer != q) continue;
          const int32_t m = t.mirror[first + static_cast<int32_t>(k)];
          if (m == engine::kNone || t.skip(t.prog_of_global(t.op_instr[m]))) continue;
          if (std::find(mirrors.begin(), mirrors.end(), t.op_instr[m]) == mirrors.end())
            mirrors.push_back(t.op_instr[m]);
        }
        if (mirrors.size() < 2) continue;
        std::string list;
        for (size_t j = 0; j < mirrors.size(); ++j) {
          const int32_t mp = t.prog_of_global(mirrors[j]);
          list += (j ? " and " : "") + rep.remote(mp, mirrors[j] - t.instr_base[mp]);
        }
        rep.add("batch-shape", p, static_cast<int32_t>(i),
                fmt::format("{}: its ops with r{} are mirrored by {} batches there: {}; they must sit in one batch",
                            rep.op(p, static_cast<int32_t>(i)), q.v, mirrors.size(), list));
      }
    }
  }
}

}  // namespace ppstream::verify_detail
