#include "replay/measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/topology.h"

namespace ppstream::replay {

MeasuredCost::MeasuredCost(const ProgramSet& set, const EngineResult& run, const sim::SimCostModel& model) : set_(set) {
  const engine::Topology topo = engine::build_topology(set);
  const auto start_of = [&](int32_t g) {
    const int32_t p = topo.prog_of_global(g);
    return run.timing[static_cast<size_t>(p)][static_cast<size_t>(g - topo.instr_base[p])].start_ms;
  };
  transfer_ms_.resize(set.programs.size());
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    transfer_ms_[p].assign(prog.instrs.size(), 0.0);
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& in = prog.instrs[k];
      const InstrTiming& t = run.timing[p][k];
      const int32_t g = topo.global(static_cast<int32_t>(p), static_cast<int32_t>(k));
      double from = t.start_ms;
      if (in.op == OpKind::BATCH) {
        for (size_t j = 0; j < in.p2p.size(); ++j) {
          const int32_t m = topo.mirror[static_cast<size_t>(topo.first_op(g)) + j];
          if (m != engine::kNone) from = std::max(from, start_of(topo.op_instr[static_cast<size_t>(m)]));
        }
      } else if (in.op == OpKind::UNSHARD || in.op == OpKind::REDUCE_GRAD) {
        const engine::CollectiveSlot& slot = topo.coll[static_cast<size_t>(topo.collective_slot(g))];
        if (slot.n > 0) {
          const engine::CollectiveInstance& ci = topo.instances[static_cast<size_t>(slot.inst[0])];
          for (int32_t j = 0; j < ci.size; ++j) {
            const int32_t mg = topo.instance_members[static_cast<size_t>(ci.members_begin + j)];
            if (mg == engine::kNone) continue;
            const int32_t mp = topo.prog_of_global(mg);
            const Program& mprog = set.programs[static_cast<size_t>(mp)];
            from = std::max(from, start_of(mg) + model.arrival_delay_ms(mprog, topo.instr(mg)));
          }
        } else {
          from += model.arrival_delay_ms(prog, in);
        }
      } else {
        continue;
      }
      transfer_ms_[p][k] = std::max(0.0, std::min(t.end_ms - from, t.end_ms - t.start_ms));
    }
  }
}

double MeasuredCost::lookup(const Program& p, const Instr& i) const {
  const size_t prog = sim::program_index(set_, p.rank);
  const auto k = static_cast<size_t>(&i - p.instrs.data());
  return transfer_ms_[prog].at(k);
}
double MeasuredCost::compute_ms(const Program&, const Instr&) const { return 0.0; }
double MeasuredCost::batch_ms(const Program& p, const Instr& i) const { return lookup(p, i); }
double MeasuredCost::collective_ms(const Program& p, const Instr& i) const { return lookup(p, i); }

EngineResult measured_run(const ProgramSet& set, std::vector<std::vector<InstrTiming>> timing) {
  EngineResult r;
  r.completed = true;
  r.timing = std::move(timing);
  for (const auto& prog : r.timing)
    for (const InstrTiming& t : prog) r.makespan_ms = std::max(r.makespan_ms, t.end_ms);
  for (const Program& p : set.programs) r.events_processed += static_cast<int64_t>(p.instrs.size());
  return r;
}

sim::PolicyRun measured_policy_run(const ProgramSet& set, ReducePolicy policy, const EngineResult& run,
                                   const sim::SimCostModel& model, const std::vector<double>& step_times_ms) {
  const MeasuredCost cost(set, run, model);
  sim::PolicyRun pr;
  pr.policy = policy;
  const int32_t dp = set.world.dp();
  sim::MetricsOptions mo;
  mo.detail = [dp](const Program& p) { return p.rank.v == p.pp_rank * dp; };
  pr.metrics = sim::compute_metrics(set, run, cost, mo);
  pr.programs = set.programs.size();
  for (const Program& p : set.programs) pr.instructions += p.instrs.size();
  pr.engine_events = run.events_processed;
  pr.trials.step_time_ms = step_times_ms;
  pr.trials.p50_ms = sim::percentile(step_times_ms, 50);
  pr.trials.p90_ms = sim::percentile(step_times_ms, 90);
  pr.trials.p99_ms = sim::percentile(step_times_ms, 99);
  double sum = 0;
  for (double v : step_times_ms) sum += v;
  pr.trials.mean_ms = sum / static_cast<double>(step_times_ms.size());
  return pr;
}

namespace {

struct Row {
  std::string name;
  double measured, simulated;
};

std::vector<Row> rows(const sim::SimMetrics& m, const sim::SimMetrics& s) {
  std::vector<Row> out = {{"step_time_ms", m.step_time_ms, s.step_time_ms},
                          {"bubble_ratio", m.bubble_ratio, s.bubble_ratio},
                          {"reduce_exposed_ms", m.reduce_exposed_ms, s.reduce_exposed_ms},
                          {"reduce_overlap_ratio", m.reduce_overlap_ratio.value_or(0), s.reduce_overlap_ratio.value_or(0)}};
  for (size_t r = 0; r < m.ranks.size() && r < s.ranks.size(); ++r)
    out.push_back({fmt::format("r{} compute_wait_ms", m.ranks[r].rank.v), m.ranks[r].compute_wait_ms, s.ranks[r].compute_wait_ms});
  return out;
}

std::string ratio(double a, double b) { return b != 0 ? fmt::format("{:.3f}", a / b) : (a == 0 ? "1" : "-"); }

}  // namespace

std::string replay_json(const sim::SimReport& measured, const sim::SimReport& simulated, const std::string& settings_json) {
  nlohmann::json j = nlohmann::json::parse(sim::report_json(measured));
  j["simulated"] = nlohmann::json::parse(sim::report_json(simulated));
  nlohmann::json rep = nlohmann::json::parse(settings_json);
  nlohmann::json ratios = nlohmann::json::object();
  for (size_t n = 0; n < measured.runs.size() && n < simulated.runs.size(); ++n) {
    nlohmann::json r = nlohmann::json::object();
    for (const Row& row : rows(measured.runs[n].metrics, simulated.runs[n].metrics))
      r[row.name] = {{"measured", row.measured}, {"simulated", row.simulated},
                     {"ratio", row.simulated != 0 ? nlohmann::json(row.measured / row.simulated) : nlohmann::json(nullptr)}};
    ratios[to_string(measured.runs[n].policy)] = std::move(r);
  }
  rep["measured_vs_simulated"] = std::move(ratios);
  j["replay"] = std::move(rep);
  return j.dump(2);
}

std::string replay_table(const sim::SimReport& measured, const sim::SimReport& simulated) {
  std::string out;
  for (size_t n = 0; n < measured.runs.size() && n < simulated.runs.size(); ++n) {
    out += fmt::format("replay {} (measured vs simulate --cluster)\n", to_string(measured.runs[n].policy));
    out += fmt::format("  {:<28} {:>12} {:>12} {:>8}\n", "metric", "measured", "simulated", "ratio");
    for (const Row& r : rows(measured.runs[n].metrics, simulated.runs[n].metrics))
      out += fmt::format("  {:<28} {:>12.3f} {:>12.3f} {:>8}\n", r.name, r.measured, r.simulated, ratio(r.measured, r.simulated));
  }
  return out + "\nmeasured:\n" + sim::report_table(measured);
}

}  // namespace ppstream::replay
