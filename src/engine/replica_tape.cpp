// The replica-vector evaluation (include/ppstream/engine/replica_tape.h): the template set, its
// recorded tape with each instance's `done` entry marked by its group kind, and the vector replay.
#include "ppstream/engine/replica_tape.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "engine/comm_queue.h"
#include "engine/cost_check.h"
#include "engine/engine_state.h"
#include "engine/platform.h"
#include "engine/topology.h"

namespace ppstream {

ProgramSet replica_template(ProgramSet one, const World& world) {
  if (!world.expanded) throw std::invalid_argument("replica_template: the world must be the expanded one");
  if (one.world.expanded) throw std::invalid_argument("replica_template: expected a one-replica set (not expanded)");
  one.world = world;
  const int32_t dp = world.dp();
  for (Program& p : one.programs) {
    p.rank = Rank{p.pp_rank * dp};
    for (Instr& i : p.instrs)
      for (P2POp& op : i.p2p) op.peer = Rank{op.peer.v * dp};
  }
  return one;
}

void renumber_replica(ProgramSet& tmpl, int32_t d) {
  const int32_t dp = tmpl.world.dp();
  if (!tmpl.world.expanded || d < 0 || d >= dp)
    throw std::invalid_argument(fmt::format("renumber_replica: replica {} of an expanded world of dp {}", d, dp));
  for (Program& p : tmpl.programs) {
    p.rank = Rank{p.pp_rank * dp + d};
    for (Instr& i : p.instrs)
      for (P2POp& op : i.p2p) op.peer = Rank{op.peer.v / dp * dp + d};
  }
}

size_t ReplicaTape::bytes() const { return (tape ? tape->bytes() : 0) + reduce.capacity(); }

ReplicaTape record_replica_tape(const ProgramSet& tmpl, const EngineOptions& opts) {
  const engine::Topology topo = engine::build_topology(tmpl, true);
  engine::check_structure(topo);
  for (const engine::NamedGroup& ng : topo.named)
    if (!ng.seq.empty())
      throw std::invalid_argument(fmt::format("replica tape: group {} is a named collective group, which the replica "
                                              "template does not form across replicas; run the expanded set",
                                              ng.spec.group));
  ReplicaTape out;
  out.world = tmpl.world;
  (void)engine::run_on_topology(tmpl, topo, opts, &out.tape);
  if (!out.tape) return out;
  // The writer's slot layout (engine/tape_writer.h): 4 per instruction, 2 per P2P op, 1 per
  // queue unit, 2 per collective slot, then 1 per instance (its last arrival).
  const auto units = engine::build_comm_queues(topo, engine::platform_for(opts.platform).comm_queues()).units.size();
  const int64_t done_base = 4 * static_cast<int64_t>(topo.instr_base.back()) +
                            2 * static_cast<int64_t>(topo.op_instr.size()) + static_cast<int64_t>(units) +
                            2 * static_cast<int64_t>(topo.coll.size());
  const auto insts = static_cast<int64_t>(topo.instances.size());
  if (done_base + insts > out.tape->slots())
    throw std::logic_error("replica tape: the tape's slot layout is not the writer's");
  const auto& entries = out.tape->entries();
  out.reduce.assign(entries.size(), 0);
  for (size_t k = 0; k < entries.size(); ++k) {
    const int64_t inst = entries[k].dst - done_base;
    if (inst < 0 || inst >= insts) continue;
    const engine::CollectiveInstance& ci = topo.instances[static_cast<size_t>(inst)];
    out.reduce[k] = static_cast<uint8_t>(static_cast<unsigned>(ci.kind) + 1);
  }
  return out;
}

double ReplicaRun::makespan_ms() const {
  double m = 0.0;
  for (double v : makespan_) m = std::max(m, v);
  return m;
}

InstrTiming ReplicaRun::timing(int32_t prog, int32_t index, int32_t d) const {
  const auto r = static_cast<size_t>(replicas_);
  const size_t at = 4 * static_cast<size_t>(instr_base_[static_cast<size_t>(prog)] + index) * r + static_cast<size_t>(d);
  return {values_[at], values_[at + r], values_[at + 2 * r], values_[at + 3 * r]};
}

EngineResult ReplicaRun::replica(int32_t d) const {
  EngineResult res;
  res.completed = true;
  res.makespan_ms = makespan_ms(d);
  for (size_t p = 0; p + 1 < instr_base_.size(); ++p) {
    auto& row = res.timing.emplace_back();
    for (int32_t i = 0; i < instr_base_[p + 1] - instr_base_[p]; ++i) row.push_back(timing(static_cast<int32_t>(p), i, d));
  }
  res.events_processed = instr_base_.back();
  return res;
}

namespace {

// Replica d's arrival terms, asked of `cost` with program `base` renumbered to d's rank.
void replica_arrivals(const Tape& tape, const CostModel& cost, const World& w, std::vector<double>& out) {
  const ProgramSet& set = tape.set();
  const int32_t dp = w.dp();
  std::vector<Program> renamed(set.programs);  // per template program: a copy to renumber
  size_t n = 0;
  for (const TapeEntry& e : tape.entries())
    if (e.cost == TapeCost::ARRIVAL || e.cost == TapeCost::ARRIVAL_OR_EXTERNAL) ++n;
  out.assign(n * static_cast<size_t>(dp), 0.0);
  double* at = out.data();
  for (const TapeEntry& e : tape.entries()) {
    if (e.cost != TapeCost::ARRIVAL && e.cost != TapeCost::ARRIVAL_OR_EXTERNAL) continue;
    if (e.cost == TapeCost::ARRIVAL_OR_EXTERNAL)
      throw std::logic_error("replica tape: an outside-members term in an expanded world's tape");
    Program& p = renamed[static_cast<size_t>(e.prog)];
    const Instr& in = p.instrs[static_cast<size_t>(e.index)];
    for (int32_t d = 0; d < dp; ++d) {
      p.rank = Rank{p.pp_rank * dp + d};
      *at++ = engine::checked_cost(cost.arrival_delay_ms(p, in), p, e.index, "arrival_delay_ms");
    }
  }
}

// row[d] = max over d's group of row (members of a SHARD group: `shard` contiguous indices; of a
// REPLICATE group: indices of stride `shard`).
void group_max(double* row, GroupKind kind, const World& w) {
  const int32_t shard = w.shard, replicate = w.replicate;
  if (kind == GroupKind::SHARD) {
    for (int32_t r = 0; r < replicate; ++r) {
      double* g = row + static_cast<size_t>(r) * static_cast<size_t>(shard);
      const double m = *std::max_element(g, g + shard);
      std::fill(g, g + shard, m);
    }
    return;
  }
  for (int32_t s = 0; s < shard; ++s) {
    double m = row[s];
    for (int32_t j = 1; j < replicate; ++j) m = std::max(m, row[static_cast<size_t>(j) * static_cast<size_t>(shard) + static_cast<size_t>(s)]);
    for (int32_t j = 0; j < replicate; ++j) row[static_cast<size_t>(j) * static_cast<size_t>(shard) + static_cast<size_t>(s)] = m;
  }
}

}  // namespace

ReplicaRun replay_replicas(const ReplicaTape& rt, const CostModel* cost, bool timing, std::vector<double>* scratch) {
  if (!rt.tape) throw std::invalid_argument("replay_replicas: the template run deadlocked; it has no tape");
  const Tape& tape = *rt.tape;
  const ProgramSet& set = tape.set();
  const World& w = rt.world;
  const int32_t dp = w.dp();
  const auto r = static_cast<size_t>(dp);
  const CostModel* asked = tape.timed() ? cost : nullptr;
  const std::vector<double> fixed = tape_costs(tape, asked).fixed;
  std::vector<double> arrival;
  if (asked)
    replica_arrivals(tape, *asked, w, arrival);
  else
    arrival.assign(tape_costs(tape, nullptr).arrival.size() * r, 0.0);

  ReplicaRun run;
  run.replicas_ = dp;
  run.instr_base_.push_back(0);
  for (const Program& p : set.programs) run.instr_base_.push_back(run.instr_base_.back() + static_cast<int32_t>(p.instrs.size()));
  // Every slot is written before it is read (tape order is topological): no initialization.
  std::vector<double>& values = run.values_;
  if (!timing && scratch) values.swap(*scratch);
  values.resize(static_cast<size_t>(tape.slots()) * r);
  double* v = values.data();
  const int32_t* op = tape.operands().data();
  const double* fx = fixed.data();
  const double* ar = arrival.data();
  const auto& entries = tape.entries();
  for (size_t k = 0; k < entries.size(); ++k) {
    const TapeEntry& e = entries[k];
    double* dst = v + static_cast<size_t>(e.dst) * r;
    if (e.ops == 0) {
      std::fill(dst, dst + r, 0.0);
    } else {
      const double* first = v + static_cast<size_t>(*op++) * r;
      if (first != dst) std::copy(first, first + r, dst);
      for (uint16_t j = 1; j < e.ops; ++j) {
        const double* src = v + static_cast<size_t>(*op++) * r;
        for (size_t d = 0; d < r; ++d) dst[d] = std::max(dst[d], src[d]);
      }
    }
    if (e.cost == TapeCost::ARRIVAL || e.cost == TapeCost::ARRIVAL_OR_EXTERNAL) {
      for (size_t d = 0; d < r; ++d) dst[d] += ar[d];
      ar += r;
    } else if (e.cost != TapeCost::NONE) {
      const double c = *fx++;
      for (size_t d = 0; d < r; ++d) dst[d] += c;
    }
    if (rt.reduce[k] != 0) group_max(dst, static_cast<GroupKind>(rt.reduce[k] - 1), w);
  }
  run.makespan_.assign(r, 0.0);
  const size_t instrs = static_cast<size_t>(run.instr_base_.back());
  for (size_t g = 0; g < instrs; ++g) {
    const double* end = v + (4 * g + 3) * r;
    for (size_t d = 0; d < r; ++d) run.makespan_[d] = std::max(run.makespan_[d], end[d]);
  }
  if (!timing && scratch)
    values.swap(*scratch);
  else if (!timing)
    std::vector<double>().swap(values);
  return run;
}

}  // namespace ppstream
