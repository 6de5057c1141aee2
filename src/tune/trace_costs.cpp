// A plan's costs from a measured job (the mapping: trace_costs.h, docs/tune.md "From a trace").
#include "tune/trace_costs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
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
        s.all_ranks[cost_key(i)].add(c.ms);
        if (is_collective(i.op)) arrivals[r][{i.op, i.stage.v}].push_back(c.arrival_ms);  // program order = occurrence
      }
    }
    s.arrival.push_back(std::move(arrivals));
  }
}

namespace {

// The cost of one instruction of a plan from the measured job, first rule that applies (the
// order in trace_costs.h); nullopt: never measured, the config's model decides.
struct Found {
  double ms = 0;
  bool derived = false;
};

class Lookup {
 public:
  Lookup(const TraceStats& stats, const sim::SimCostModel& model, double input_fraction)
      : stats_(stats), model_(model), f_(input_fraction) {}

  std::optional<Found> operator()(int32_t rank, const Instr& i) const {
    const auto& own = stats_.cost.at(static_cast<size_t>(rank));
    if (const Mean* m = get(own, cost_key(i))) return Found{m->value(), false};
    if (i.op == OpKind::BATCH) return batch_from_other_width(own, i);
    if (auto d = split_or_joined(own, i)) return d;
    if (const Mean* m = get(stats_.all_ranks, cost_key(i))) return Found{m->value(), true};  // stage run elsewhere
    return split_or_joined(stats_.all_ranks, i);
  }

 private:
  static const Mean* get(const std::map<CostKey, Mean>& m, const CostKey& k) {
    const auto it = m.find(k);
    return it == m.end() ? nullptr : &it->second;
  }
  // I = f·B, W = (1 − f)·B from a measured B; B = I + W from measured I and W.
  std::optional<Found> split_or_joined(const std::map<CostKey, Mean>& m, const Instr& i) const {
    const int32_t s = i.stage.v;
    if (i.op == OpKind::I || i.op == OpKind::W)
      if (const Mean* b = get(m, {OpKind::B, s, 0})) return Found{(i.op == OpKind::I ? f_ : 1.0 - f_) * b->value(), true};
    if (i.op == OpKind::B)
      if (const Mean *in = get(m, {OpKind::I, s, 0}), *w = get(m, {OpKind::W, s, 0}); in && w)
        return Found{in->value() + w->value(), true};
    return std::nullopt;
  }
  // A width the rank never batched: its nearest measured width (ties: the smaller) scaled by the
  // config model's ratio of the two widths' times.
  std::optional<Found> batch_from_other_width(const std::map<CostKey, Mean>& own, const Instr& i) const {
    const int32_t w = cost_key(i).width;
    const Mean* best = nullptr;
    int32_t best_w = 0;
    for (auto it = own.lower_bound({OpKind::BATCH, -1, 0}); it != own.end() && it->first.op == OpKind::BATCH; ++it)
      if (!best || std::abs(it->first.width - w) < std::abs(best_w - w)) best = &it->second, best_w = it->first.width;
    if (!best) return std::nullopt;
    const double to = model_.base_batch_ms(i), from = model_.base_batch_ms(batch_of_width(best_w));
    return Found{from > 0 ? best->value() * to / from : best->value(), true};
  }
  static Instr batch_of_width(int32_t w) {
    Instr b;
    b.op = OpKind::BATCH;
    b.p2p.assign(static_cast<size_t>(w), P2POp{});  // w sends: the model counts only the width
    return b;
  }
  const TraceStats& stats_;
  const sim::SimCostModel& model_;
  double f_;
};

}  // namespace

PlanTraceCosts::PlanTraceCosts(const sim::CompiledPlan& plan, const sim::TrialSetup& setup, const TraceStats& stats)
    : plan_(&plan), setup_(&setup), stats_(&stats) {
  const ProgramSet& set = plan.programs();
  if (!same_world(set.world, stats.world))
    throw std::invalid_argument("tune --from-trace: a plan's world is not the trace's (plans keep the trace's parallel sizes)");
  const sim::SimCostModel model(set, plan.config(), setup.cost, sim::StragglerModel(setup.straggler, set.world, 0));
  const Lookup lookup(stats, model, setup.cost.backward_input_fraction);
  ms_.resize(set.programs.size());
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    std::map<std::pair<OpKind, int32_t>, int32_t> occurrence;
    ms_[p].assign(prog.instrs.size(), 0.0);
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      if (!has_cost(i.op)) continue;
      const std::string kind = to_string(i.op);
      if (const std::optional<Found> found = lookup(prog.rank.v, i)) {
        ms_[p][k] = found->ms;
        if (found->derived) ++origins_.derived[kind];
        else ++origins_.measured;
      } else {
        ms_[p][k] = i.op == OpKind::BATCH ? model.base_batch_ms(i)
                    : is_collective(i.op) ? model.base_collective_ms(i)
                                          : model.compute_ms(prog, i);
        ++origins_.unmeasured[kind];
      }
      if (!is_collective(i.op)) continue;
      const std::pair<OpKind, int32_t> key{i.op, i.stage.v};
      colls_.push_back({p, k, prog.rank.v, occurrence[key]++, key});
      const auto& first_step = stats.arrival.front().at(static_cast<size_t>(prog.rank.v));
      if (const auto it = first_step.find(key); it == first_step.end() || it->second.empty())
        ++origins_.unmeasured[kind + " arrival"];  // every step has the same programs: one look
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
