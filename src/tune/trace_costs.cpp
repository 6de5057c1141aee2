// A plan's costs from a measured job (the mapping: trace_costs.h, docs/tune.md "From a trace").
#include "tune/trace_costs.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <random>

#include "ppstream/sim/cost_model.h"
#include "ppstream/whatif/whatif.h"

namespace ppstream::tune_detail {
namespace {

bool has_cost(OpKind op) { return op != OpKind::RECORD && op != OpKind::WAIT; }
bool is_collective(OpKind op) { return op == OpKind::UNSHARD || op == OpKind::REDUCE_GRAD; }
bool same_world(const World& a, const World& b) {
  return a.pp == b.pp && a.vpp == b.vpp && a.shard == b.shard && a.replicate == b.replicate && a.expanded == b.expanded;
}

}  // namespace

CostKey cost_key(const Instr& i) {
  if (i.op != OpKind::BATCH) return {i.op, i.stage.v, 0};
  int32_t sends = 0, recvs = 0;
  for (const P2POp& op : i.p2p) (is_send(op.kind) ? sends : recvs) += 1;
  return {i.op, -1, std::max(sends, recvs)};
}

void add_lifted(TraceStats& s, const whatif::LiftedTrace& t) {
  const World& w = t.programs.world;
  if (s.cost.empty()) {
    s.world = w;
    s.cost.resize(static_cast<size_t>(w.pp * w.dp()));
  } else if (!same_world(s.world, w)) {
    throw whatif::LiftError(fmt::format("tune --from-trace: {}: its world (pp {}, vpp {}, shard {}, replicate {}) is not the "
                                        "first trace's (pp {}, vpp {}, shard {}, replicate {}): give traces of one job",
                                        t.path, w.pp, w.vpp, w.shard, w.replicate, s.world.pp, s.world.vpp, s.world.shard,
                                        s.world.replicate));
  }
  for (const whatif::LiftedTrace::Step& st : t.steps) {
    std::vector<TraceStats::Arrivals> arrivals(s.cost.size());
    for (size_t p = 0; p < t.programs.programs.size(); ++p) {
      const Program& prog = t.programs.programs[p];
      const auto r = static_cast<size_t>(prog.rank.v);
      for (size_t k = 0; k < prog.instrs.size(); ++k) {
        const Instr& i = prog.instrs[k];
        if (!has_cost(i.op)) continue;
        const whatif::MeasuredCost& c = st.costs[p][k];
        s.cost[r][cost_key(i)].add(c.ms);
        if (is_collective(i.op)) arrivals[r][{i.op, i.stage.v}].push_back(c.arrival_ms);  // program order = occurrence
      }
    }
    s.arrival.push_back(std::move(arrivals));
  }
}

PlanTraceCosts::PlanTraceCosts(const sim::CompiledPlan& plan, const sim::TrialSetup& setup, const TraceStats& stats)
    : plan_(&plan), setup_(&setup), stats_(&stats) {
  const ProgramSet& set = plan.programs();
  if (!same_world(set.world, stats.world))
    throw std::invalid_argument("tune --from-trace: a plan's world is not the trace's (plans keep the trace's parallel sizes)");
  const sim::SimCostModel fallback(set, plan.config(), setup.cost, sim::StragglerModel(setup.straggler, set.world, 0));
  const double f = setup.cost.backward_input_fraction;
  ms_.resize(set.programs.size());
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    const auto& measured = stats.cost.at(static_cast<size_t>(prog.rank.v));
    const auto find = [&](OpKind op, int32_t stage) -> const Mean* {
      const auto it = measured.find({op, stage, 0});
      return it == measured.end() ? nullptr : &it->second;
    };
    std::map<std::pair<OpKind, int32_t>, int32_t> occurrence;
    ms_[p].assign(prog.instrs.size(), 0.0);
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      if (!has_cost(i.op)) continue;
      const std::string kind = to_string(i.op);
      double& ms = ms_[p][k];
      const Mean* b = find(OpKind::B, i.stage.v);
      const Mean *in = find(OpKind::I, i.stage.v), *wt = find(OpKind::W, i.stage.v);
      if (const auto it = measured.find(cost_key(i)); it != measured.end()) {
        ms = it->second.value();
        ++origins_.measured;
      } else if ((i.op == OpKind::I || i.op == OpKind::W) && b) {
        ms = (i.op == OpKind::I ? f : 1.0 - f) * b->value();
        ++origins_.derived[kind];
      } else if (i.op == OpKind::B && in && wt) {
        ms = in->value() + wt->value();
        ++origins_.derived[kind];
      } else {
        ms = i.op == OpKind::BATCH ? fallback.base_batch_ms(i)
             : is_collective(i.op) ? fallback.base_collective_ms(i)
                                   : fallback.compute_ms(prog, i);
        ++origins_.unmeasured[kind];
      }
      if (is_collective(i.op))
        colls_.push_back({p, k, prog.rank.v, occurrence[{i.op, i.stage.v}]++, {i.op, i.stage.v}});
    }
  }
}

std::vector<std::vector<double>> PlanTraceCosts::arrivals(const std::vector<int32_t>& steps_of_rank, uint64_t trial) const {
  std::vector<std::vector<double>> out(ms_.size());
  for (size_t p = 0; p < ms_.size(); ++p) out[p].assign(ms_[p].size(), 0.0);
  std::optional<sim::StragglerModel> strag;  // the config's, only for a collective the trace never had
  for (const Coll& c : colls_) {
    const auto& measured = stats_->arrival.at(static_cast<size_t>(steps_of_rank.at(static_cast<size_t>(c.rank))))
                               .at(static_cast<size_t>(c.rank));
    const auto it = measured.find(c.key);
    double& v = out[c.prog][c.instr];
    if (it != measured.end() && !it->second.empty()) {
      v = it->second[std::min(static_cast<size_t>(c.occurrence), it->second.size() - 1)];
    } else {
      if (!strag) strag.emplace(setup_->straggler, plan_->programs().world, trial);
      v = strag->delay_ms(c.rank, c.key.first == OpKind::UNSHARD ? sim::CollectiveKind::UNSHARD : sim::CollectiveKind::REDUCE_GRAD,
                          Stage{c.key.second});
    }
  }
  return out;
}

std::vector<int32_t> trial_steps(uint64_t seed, uint64_t trial, int32_t ranks, int32_t steps) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(trial),
                    static_cast<uint32_t>(trial >> 32)};
  std::mt19937_64 gen(seq);  // the engine is specified by the standard: the same draws everywhere
  std::vector<int32_t> out(static_cast<size_t>(ranks), 0);
  if (steps > 1)
    for (int32_t& s : out) s = static_cast<int32_t>(gen() % static_cast<uint64_t>(steps));
  return out;
}

TraceCostModel::TraceCostModel(const ProgramSet& set, const std::vector<std::vector<double>>& ms,
                               std::vector<std::vector<double>> arrival, double host_issue_ms)
    : set_(&set), ms_(&ms), arrival_(std::move(arrival)), host_issue_ms_(host_issue_ms) {}

double TraceCostModel::at(const std::vector<std::vector<double>>& t, const Program& p, const Instr& i) const {
  const auto pi = static_cast<size_t>(&p - set_->programs.data());
  const auto ki = static_cast<size_t>(&i - p.instrs.data());
  return t.at(pi).at(ki);
}

}  // namespace ppstream::tune_detail
