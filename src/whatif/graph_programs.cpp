// The lifted graph as stream programs (docs/whatif.md "Lifting as programs"): per worker, the
// template ops of its stage in the graph's topological order, each on its lane's stream —
// compute (forward, backward, gc, optimizer), one stream per P2P lane, `dp` (params all-gather,
// grads reduce-scatter) and `post` (layernorm, embedding, separate all-reduce, clip) — with a
// WAIT before an op for each dependency on another stream and a RECORD after each op another
// stream depends on. Communication groups become instructions:
//  - a P2P pair: a BATCH on each side (SEND_F mb s ->r ↔ RECV_F mb s+1 <-r, the microbatch and
//    stage of the compute the send follows / the receive feeds);
//  - a DP collective, the embedding all-reduce, clip's all-reduce: a COLLECTIVE of the group's
//    workers (dp.p<stage>, emb.d<dp rank>, clip);
//  - an op no group holds other than forward / backward / optimizer (a P2P op that carries no
//    data, gc, the layernorm all-reduce whose TP group is not traced, DP collectives at DP 1): a
//    COLLECTIVE of its worker alone (alone.<stream>.r<rank>), which ends its own time after it
//    starts — the IR has no instruction for other compute.
#include "graph_programs.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {
namespace {

const char* stream_of(OpType t) {
  switch (t) {
    case OpType::FWD:
    case OpType::BWD:
    case OpType::GC:
    case OpType::OPTIMIZER: return "compute";
    case OpType::FWD_SEND: return "p2p.fsend";
    case OpType::FWD_RECV: return "p2p.frecv";
    case OpType::BWD_SEND: return "p2p.bsend";
    case OpType::BWD_RECV: return "p2p.brecv";
    case OpType::PARAMS_AG:
    case OpType::GRADS_RS: return "dp";
    default: return "post";
  }
}

CollectiveType collective_type(OpType t) {
  if (t == OpType::PARAMS_AG) return CollectiveType::ALL_GATHER;
  if (t == OpType::GRADS_RS) return CollectiveType::REDUCE_SCATTER;
  return CollectiveType::ALL_REDUCE;
}

struct Builder {
  const Job& job;
  const Graph& g;
  std::vector<std::string>& notes;
  GraphPrograms out;
  std::vector<int32_t> position;            // [op] → place in g.order (ops only)
  std::vector<std::vector<int32_t>> users;  // [op] → ops that depend on it
  std::vector<char> recorded;               // [op] → some op on another stream depends on it
  std::vector<std::optional<Collective>> dp_sync_collective;  // [op] → its collective, once made (DP-synchronised)

  int32_t rank(int32_t stage, int32_t d) const { return stage * job.dp + d; }
  const TemplateOp& op(int32_t k) const { return job.ops[static_cast<size_t>(k)]; }
  Stage stage_of(int32_t k) const { return Stage{std::max(op(k).chunk, 0) * job.pp + op(k).stage}; }
  bool same_stream(int32_t a, int32_t b) const { return std::string_view(stream_of(op(a).type)) == stream_of(op(b).type); }

  // The compute a P2P op carries: a send's compute dependency, the compute a receive feeds.
  int32_t carried(int32_t k) const {
    const bool send = op(k).type == OpType::FWD_SEND || op(k).type == OpType::BWD_SEND;
    for (int32_t c : send ? g.deps[static_cast<size_t>(k)] : users[static_cast<size_t>(k)])
      if (is_compute(op(c).type)) return c;
    throw LiftError(fmt::format("{}: a paired P2P op with no compute it carries", job.where(k, 0)));
  }

  Instr instr_of(Program& prog, int32_t k, int32_t d) {
    Instr in;
    in.stream = prog.intern_stream(stream_of(op(k).type));
    const int32_t me = rank(op(k).stage, d);
    if (is_compute(op(k).type)) {
      if (op(k).mb < 0) throw LiftError(fmt::format("{}: a compute op without mb_id", job.where(k, d)));
      in.op = op(k).type == OpType::FWD ? OpKind::F : OpKind::B;
      in.mb = Microbatch{op(k).mb};
      in.stage = stage_of(k);
      return in;
    }
    if (op(k).type == OpType::OPTIMIZER) {
      in.op = OpKind::OPT_STEP;
      return in;
    }
    const int32_t gi = g.group[static_cast<size_t>(k)];
    Collective c;
    c.op = collective_type(op(k).type);
    if (gi < 0 || (g.groups[static_cast<size_t>(gi)].members.size() == 1 && !g.groups[static_cast<size_t>(gi)].dp_sync) ||
        (is_p2p(op(k).type) && g.groups[static_cast<size_t>(gi)].members.size() == 1)) {
      c.group = fmt::format("alone.{}.r{}", stream_of(op(k).type), me);
      c.first = Rank{me};
      in.op = OpKind::COLLECTIVE;
      in.coll = prog.intern_collective(c);
      return in;
    }
    const CommGroup& grp = g.groups[static_cast<size_t>(gi)];
    // An op of a DP-synchronised group has the same collective on every DP rank (its workers
    // span them all; its name has no DP rank): made once per op.
    const bool per_op = grp.dp_sync && !is_p2p(op(k).type) && op(k).type != OpType::EMBEDDING_AR;
    std::optional<Collective>& same = dp_sync_collective[static_cast<size_t>(k)];
    if (per_op && same) {
      in.op = OpKind::COLLECTIVE;
      in.coll = prog.intern_collective(*same);
      return in;
    }
    if (is_p2p(op(k).type)) {
      const int32_t peer_op = grp.members[0] == k ? grp.members[1] : grp.members[0];
      const int32_t c0 = carried(k);
      P2POp p2p;
      switch (op(k).type) {
        case OpType::FWD_SEND: p2p.kind = P2PKind::SEND_F; break;
        case OpType::FWD_RECV: p2p.kind = P2PKind::RECV_F; break;
        case OpType::BWD_SEND: p2p.kind = P2PKind::SEND_B; break;
        default: p2p.kind = P2PKind::RECV_B; break;
      }
      p2p.mb = Microbatch{op(c0).mb};
      p2p.stage = stage_of(c0);
      p2p.peer = Rank{rank(op(peer_op).stage, d)};
      in.op = OpKind::BATCH;
      in.p2p.push_back(p2p);
      return in;
    }
    // The group's workers: each member op's stage, on every DP rank (dp_sync) or this one.
    std::vector<int32_t> ranks;
    for (int32_t m : grp.members) {
      if (grp.dp_sync) {
        for (int32_t e = 0; e < job.dp; ++e) ranks.push_back(rank(op(m).stage, e));
      } else {
        ranks.push_back(rank(op(m).stage, d));
      }
    }
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    c.first = Rank{ranks.front()};
    c.count = static_cast<int32_t>(ranks.size());
    c.stride = c.count > 1 ? ranks[1] - ranks[0] : 1;
    for (size_t j = 0; j < ranks.size(); ++j)
      if (ranks[j] != c.first.v + static_cast<int32_t>(j) * c.stride)
        throw LiftError(fmt::format("{}: its group's workers (ranks r{}, r{}, …) are not a strided rank range",
                                    job.where(k, d), ranks[0], ranks[1]));
    switch (op(k).type) {
      case OpType::PARAMS_AG:
      case OpType::GRADS_RS:
      case OpType::SEP_GRADS_AR: c.group = fmt::format("dp.p{}", op(k).stage); break;
      case OpType::EMBEDDING_AR: c.group = fmt::format("emb.d{}", d); break;
      case OpType::CLIP: c.group = "clip"; break;
      default: c.group = fmt::format("g{}.r{}", gi, c.first.v); break;
    }
    if (per_op) same = c;
    in.op = OpKind::COLLECTIVE;
    in.coll = prog.intern_collective(c);
    return in;
  }

  // Whether `q` (earlier on k's stream) is an ancestor of k.
  bool depends_on(int32_t k, int32_t q) const {
    std::vector<int32_t> todo{k};
    std::vector<char> seen(job.ops.size(), 0);
    while (!todo.empty()) {
      const int32_t v = todo.back();
      todo.pop_back();
      for (int32_t u : g.deps[static_cast<size_t>(v)]) {
        if (u == q) return true;
        if (seen[static_cast<size_t>(u)] || position[static_cast<size_t>(u)] < position[static_cast<size_t>(q)]) continue;
        seen[static_cast<size_t>(u)] = 1;
        todo.push_back(u);
      }
    }
    return false;
  }

  void build() {
    const auto K = job.ops.size();
    position.assign(K, 0);
    users.assign(K, {});
    recorded.assign(K, 0);
    dp_sync_collective.assign(K, std::nullopt);
    std::vector<std::vector<int32_t>> order_of_stage(static_cast<size_t>(job.pp));
    int32_t pos = 0;
    for (int32_t n : g.order) {
      if (n < 0) continue;
      position[static_cast<size_t>(n)] = pos++;
      order_of_stage[static_cast<size_t>(op(n).stage)].push_back(n);
    }
    for (size_t v = 0; v < K; ++v)
      for (int32_t u : g.deps[v]) {
        users[static_cast<size_t>(u)].push_back(static_cast<int32_t>(v));
        if (!same_stream(u, static_cast<int32_t>(v))) recorded[static_cast<size_t>(u)] = 1;
      }
    // FIFO on a stream adds a dependency on the op before: name those the graph does not have.
    int64_t fifo_added = 0;
    std::string first_fifo;
    for (const auto& ks : order_of_stage) {
      std::map<std::string_view, int32_t> last;
      for (int32_t k : ks) {
        auto it = last.find(stream_of(op(k).type));
        if (it != last.end() && !depends_on(k, it->second) && fifo_added++ == 0)
          first_fifo = fmt::format("{} after {}", job.where(k, 0), job.where(it->second, 0));
        last[stream_of(op(k).type)] = k;
      }
    }
    if (fifo_added > 0)
      notes.push_back(fmt::format("lifted programs: {} ops follow an op of their stream they do not depend on "
                                  "(FIFO order adds that dependency), e.g. {}",
                                  fifo_added, first_fifo));
    out.grouped.assign(K, 0);
    for (size_t k = 0; k < K; ++k) out.grouped[k] = g.group[k] >= 0 ? 1 : 0;
    World& w = out.set.world;
    w.pp = job.pp;
    w.vpp = job.vpp;
    w.shard = job.dp;
    w.replicate = 1;
    w.expanded = true;
    out.dp = job.dp;
    for (int32_t p = 0; p < job.pp; ++p) {
      for (int32_t d = 0; d < job.dp; ++d) {
        Program prog;
        prog.rank = Rank{rank(p, d)};
        prog.pp_rank = p;
        std::vector<int32_t> op_of;
        for (int32_t k : order_of_stage[static_cast<size_t>(p)]) {
          Instr in = instr_of(prog, k, d);
          for (int32_t u : g.deps[static_cast<size_t>(k)]) {
            if (same_stream(u, k)) continue;
            Instr wait;
            wait.op = OpKind::WAIT;
            wait.stream = in.stream;
            wait.event = prog.intern_event(fmt::format("done.{}", u));
            prog.instrs.push_back(wait);
            op_of.push_back(-1);
          }
          const StreamId stream = in.stream;
          prog.instrs.push_back(std::move(in));
          op_of.push_back(k);
          if (recorded[static_cast<size_t>(k)]) {
            Instr rec;
            rec.op = OpKind::RECORD;
            rec.stream = stream;
            rec.event = prog.intern_event(fmt::format("done.{}", k));
            prog.instrs.push_back(rec);
            op_of.push_back(-1);
          }
        }
        out.set.programs.push_back(std::move(prog));
        out.op_of.push_back(std::move(op_of));
      }
    }
  }
};

}  // namespace

int64_t GraphPrograms::instructions() const {
  int64_t n = 0;
  for (const Program& p : set.programs) n += static_cast<int64_t>(p.instrs.size());
  return n;
}

GraphPrograms programs_of_graph(const Job& job, const Graph& g, std::vector<std::string>& notes) {
  Builder b{job, g, notes, {}, {}, {}, {}, {}};
  b.build();
  return std::move(b.out);
}

}  // namespace ppstream::whatif
