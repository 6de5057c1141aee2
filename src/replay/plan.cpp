#include "replay/plan.h"

#include <algorithm>
#include <stdexcept>

#include "engine/topology.h"

namespace ppstream::replay {
namespace {

// Doubles for `bytes` bytes, capped at max_bytes, rounded down to a multiple of `unit` (>= unit).
int64_t scaled_elems(double bytes, int64_t max_bytes, int32_t unit) {
  const double capped = std::min(bytes, static_cast<double>(max_bytes));
  int64_t n = static_cast<int64_t>(capped / 8.0);
  n -= n % unit;
  return std::max<int64_t>(n, unit);
}

// P2P tags: the k-th op of a channel (peer, F|B, send|recv) gets tag 2k + dir, so the k-th send
// pairs with the k-th receive as the engine pairs them, whatever order streams post in.
void assign_tags(const Program& p, RankPlan& plan) {
  constexpr int kTagSpan = 16384;  // MPI guarantees tags up to 32767
  std::map<std::tuple<int32_t, bool, bool>, int> next;
  for (size_t k = 0; k < p.instrs.size(); ++k)
    for (const P2POp& op : p.instrs[k].p2p) {
      const bool fwd = is_forward(op.kind);
      int& n = next[{op.peer.v, fwd, is_send(op.kind)}];
      plan.instrs[k].tags.push_back((n++ % kTagSpan) * 2 + (fwd ? 0 : 1));
    }
}

void assign_phases(const ProgramSet& set, size_t prog, const engine::Topology& topo, RankPlan& plan) {
  const int32_t base = topo.instr_base[prog];
  for (engine::GroupKind kind : engine::kGroupKinds) {
    const auto& seq = topo.group_seq[kind][prog];
    const int comm = static_cast<int>(kind);  // kShardComm / kReplicateComm
    for (size_t k = 0; k < seq.size(); ++k) {
      const Instr& in = set.programs[prog].instrs[static_cast<size_t>(seq[k] - base)];
      const CollOp op = in.op == OpKind::UNSHARD            ? CollOp::ALL_GATHER
                        : kind == engine::GroupKind::SHARD ? CollOp::REDUCE_SCATTER
                                                           : CollOp::ALL_REDUCE;
      plan.instrs[static_cast<size_t>(seq[k] - base)].phases.push_back({op, comm, static_cast<int64_t>(k)});
    }
    plan.group_color[comm] = topo.group_of[kind][prog];
  }
}

}  // namespace

RankPlan make_plan(const ProgramSet& set, size_t prog, const PipelineConfig& cfg, const sim::CostSpec& cost,
                   int64_t max_bytes) {
  const engine::Topology topo = engine::build_topology(set);
  if (!topo.errors.empty()) throw std::invalid_argument("replay: " + topo.errors.front().message);
  if (!topo.named.empty())
    throw std::invalid_argument("replay: the set holds COLLECTIVE instructions (group " + topo.named.front().spec.group +
                                "); replay runs compiled programs, whose collectives are UNSHARD / REDUCE_GRAD");
  const Program& p = set.programs[prog];
  const World& w = set.world;
  RankPlan plan;
  plan.prog = prog;
  plan.instrs.resize(p.instrs.size());
  std::vector<int32_t> event_of(p.event_names.size(), -1);  // per EventId: the plan's event, in order of first use
  int32_t events = 0;
  std::vector<int32_t> slot_of(p.stream_names.size(), -1);  // per StreamId: the plan's stream, in order of first use
  for (size_t k = 0; k < p.instrs.size(); ++k) {
    const Instr& in = p.instrs[k];
    int32_t& slot = slot_of[in.stream.v];
    if (slot < 0) {
      slot = static_cast<int32_t>(plan.streams.size());
      plan.streams.push_back(p.stream_name(in.stream));
      plan.stream_instrs.emplace_back();
    }
    plan.instrs[k].stream = slot;
    plan.stream_instrs[static_cast<size_t>(slot)].push_back(static_cast<int32_t>(k));
    if (in.op == OpKind::RECORD || in.op == OpKind::WAIT) {
      int32_t& e = event_of[in.event.v];  // ids are in the table (topology checked)
      if (e < 0) e = events++;
      plan.instrs[k].event = e;
      if (in.op == OpKind::WAIT) {
        const int32_t rec = topo.synced_record(static_cast<int32_t>(prog), static_cast<int32_t>(k));
        plan.instrs[k].record = rec == engine::kNone ? -1 : rec;
      }
    }
  }
  plan.events = events;
  assign_tags(p, plan);
  assign_phases(set, prog, topo, plan);
  for (Rank r : topo.group_ranks(engine::GroupKind::SHARD, plan.group_color[0])) plan.shard_members.push_back(r.v);
  for (Rank r : topo.group_ranks(engine::GroupKind::REPLICATE, plan.group_color[1])) plan.replicate_members.push_back(r.v);
  plan.shard_index = p.rank.v % w.shard;
  const int32_t dp = w.dp();
  for (int32_t d = 0; d < dp; ++d) plan.dp_members.push_back(p.pp_rank * dp + d);
  plan.p2p_elems = scaled_elems(cost.activation_bytes, max_bytes, 1);
  for (int32_t s = 0; s < cfg.num_stages(); ++s) {
    const double layers = static_cast<size_t>(s) < cfg.stage_layers.size() ? cfg.stage_layers[static_cast<size_t>(s)].count() : 1;
    plan.grad_elems.push_back(scaled_elems(layers * cost.grad_bytes_per_layer, max_bytes, w.shard));
    plan.stage_layers.push_back(static_cast<int32_t>(layers));
    plan.param_elems.push_back(scaled_elems(layers * cost.param_bytes_per_layer, max_bytes, w.shard));
  }
  return plan;
}

}  // namespace ppstream::replay
