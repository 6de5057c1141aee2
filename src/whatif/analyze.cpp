// The what-if figures (docs/whatif.md "Figures"): measured costs from the trace, the
// re-simulation check, the ideal, S and its attribution, M_W and M_S.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine_eval.h"
#include "graph.h"
#include "graph_counterfactual.h"
#include "graph_programs.h"
#include "job.h"
#include "ppstream/analyze/readers.h"
#include "ppstream/verify/verify.h"
#include "ppstream/whatif/whatif.h"
#include "sim_graph.h"

namespace ppstream::whatif {
namespace {

constexpr double kClampMs = 10.0;  // negative delays / transfers beyond clock skew are set to 0 (the artifact's EPS)

struct Measured {
  int64_t rows = 0;
  std::vector<double> dur, transfer, delay;  // [op · rows + row]
  // Transfers and delays kept below 0 (in (-kClampMs, 0)), and the most negative of them (ms).
  int64_t negative = 0;
  double most_negative = 0;
};

// Per-type ideal values: duration of compute-like ops, transfer of group members.
struct Ideal {
  std::vector<double> dur, transfer;  // [op] (by the op's type)
};

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const size_t n = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n), v.end());
  const double hi = v[n];
  if (v.size() % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
  return (lo + hi) / 2;
}

struct Analysis {
  Job& job;
  const Graph& g;
  const WhatIfOptions& opts;
  Measured m;
  Ideal ideal;
  int64_t sims_done = 0, sims_total = 0;
  // The lifted programs of `g` (engine evaluator or check_programs), and what comparing the
  // engine with the graph evaluator found.
  const EngineWorlds* worlds = nullptr;
  ProgramsCheck check{};
  SimScratch scratch{};  // the graph evaluator's buffers, reused by every evaluation

  bool on_engine() const { return opts.evaluator == Evaluator::ENGINE; }

  // One evaluation (docs/whatif.md "Evaluation on the engine"): the step time of each of
  // `steps` steps under `view`, on `rows` rows per step — job.dp (the full world), 2 (the
  // reduced world: row 0 one DP rank, row 1 the ideal row standing for the others) or 1 (a
  // view equal on every row: the ideal). By the evaluator of opts; with check_programs the
  // other one runs beside it and the largest difference is kept (not for the re-simulation with
  // launch delays, `compare` false: there the engine takes the trace's small negative delays
  // and transfers as 0, docs/whatif.md "Negative costs"). `graph` / `w`: the graph and its
  // lifted worlds (the traced one or the counterfactual's).
  template <class View>
  std::vector<double> eval(const Graph& graph, const EngineWorlds* w, const View& view, int32_t nsteps, int32_t rows,
                           EngineResult* keep = nullptr, SimRun* keep_graph = nullptr, bool compare = true) {
    const auto by_engine = [&] {
      const EngineWorld& world = rows == job.dp ? *w->full : w->two_rows();
      check.runs += nsteps;
      return world.steps_ms(view, nsteps, keep);
    };
    const auto by_graph = [&] {
      SimRun r = simulate_graph(graph, nsteps, rows, view, keep_graph != nullptr, &scratch);
      auto out = r.step_ms;
      if (keep_graph) *keep_graph = std::move(r);
      return out;
    };
    std::vector<double> out = on_engine() ? by_engine() : by_graph();
    if (opts.check_programs && compare) {
      const std::vector<double> other = on_engine() ? by_graph() : by_engine();
      for (size_t s = 0; s < out.size(); ++s) check.max_diff_ms = std::max(check.max_diff_ms, std::abs(other[s] - out[s]));
    }
    return out;
  }

  int32_t K() const { return static_cast<int32_t>(job.ops.size()); }
  int32_t steps() const { return static_cast<int32_t>(job.steps.size()); }

  void tick() {
    ++sims_done;
    if (opts.progress) opts.progress(sims_done, sims_total);
  }

  void measure(std::vector<std::string>& notes) {
    const int64_t R = job.rows();
    m.rows = R;
    m.transfer.assign(job.dur_ms.size(), 0.0);
    m.delay.assign(job.dur_ms.size(), 0.0);
    int64_t clamped_transfer = 0, clamped_delay = 0;
    std::vector<double> join(static_cast<size_t>(R));
    for (const CommGroup& grp : g.groups) {
      std::fill(join.begin(), join.end(), -1e300);
      for (int32_t k : grp.members) {
        for (int64_t r = 0; r < R; ++r) join[static_cast<size_t>(r)] = std::max(join[static_cast<size_t>(r)], job.start_ms[job.at(k, r)]);
      }
      if (grp.dp_sync) {
        for (int64_t s0 = 0; s0 < R; s0 += job.dp) {
          const double mx = *std::max_element(join.begin() + s0, join.begin() + s0 + job.dp);
          std::fill(join.begin() + s0, join.begin() + s0 + job.dp, mx);
        }
      }
      for (int32_t k : grp.members) {
        for (int64_t r = 0; r < R; ++r) {
          const size_t at = job.at(k, r);
          double t = job.start_ms[at] + job.dur_ms[at] - join[static_cast<size_t>(r)];
          if (t <= -kClampMs) {
            t = 0;
            ++clamped_transfer;
          }
          m.transfer[at] = t;
          if (t < 0) {
            ++m.negative;
            m.most_negative = std::min(m.most_negative, t);
          }
        }
      }
    }
    for (int32_t k = 0; k < K(); ++k) {
      const auto& deps = g.deps[static_cast<size_t>(k)];
      for (int64_t r = 0; r < R; ++r) {
        double t = 0;
        for (int32_t u : deps) t = std::max(t, job.start_ms[job.at(u, r)] + job.dur_ms[job.at(u, r)]);
        const size_t at = job.at(k, r);
        double d = job.start_ms[at] - t;
        if (d <= -kClampMs) {
          d = 0;
          ++clamped_delay;
        }
        m.delay[at] = d;
        if (d < 0) {
          ++m.negative;
          m.most_negative = std::min(m.most_negative, d);
        }
      }
    }
    // The table's times are not needed past here: its durations become the measured costs.
    m.dur = std::move(job.dur_ms);
    std::vector<double>().swap(job.start_ms);
    if (clamped_transfer > 0)
      notes.push_back(fmt::format("{} transfer times below -{} ms (an op ending before its group's last member "
                                  "started: clock skew) set to 0",
                                  clamped_transfer, kClampMs));
    if (clamped_delay > 0)
      notes.push_back(fmt::format("{} launch delays below -{} ms (an op starting before what it depends on ended) "
                                  "set to 0; the re-simulation cannot reproduce those ops' starts",
                                  clamped_delay, kClampMs));
  }

  void make_ideal() {
    std::vector<std::vector<double>> durs(kOpTypes), transfers(kOpTypes);
    const int64_t R = job.rows();
    for (int32_t k = 0; k < K(); ++k) {
      const auto t = static_cast<size_t>(job.ops[static_cast<size_t>(k)].type);
      const bool member = g.group[static_cast<size_t>(k)] >= 0;
      for (int64_t r = 0; r < R; ++r) {
        durs[t].push_back(m.dur[job.at(k, r)]);
        if (member) transfers[t].push_back(m.transfer[job.at(k, r)]);
      }
    }
    std::vector<double> type_dur(kOpTypes), type_transfer(kOpTypes);
    for (int t = 0; t < kOpTypes; ++t) {
      const bool use_median = opts.agg == Agg::MEDIAN || is_comm_type(static_cast<OpType>(t));
      type_dur[static_cast<size_t>(t)] = use_median ? median(durs[static_cast<size_t>(t)]) : mean(durs[static_cast<size_t>(t)]);
      type_transfer[static_cast<size_t>(t)] = use_median ? median(transfers[static_cast<size_t>(t)]) : mean(transfers[static_cast<size_t>(t)]);
    }
    for (const TemplateOp& op : job.ops) {
      ideal.dur.push_back(type_dur[static_cast<size_t>(op.type)]);
      ideal.transfer.push_back(type_transfer[static_cast<size_t>(op.type)]);
    }
  }

  // Cost views.
  struct MeasuredCost {
    const Measured& m;
    bool delays;
    double dur(int32_t k, int64_t j) const { return m.dur[static_cast<size_t>(k * m.rows + j)]; }
    double transfer(int32_t k, int64_t j) const { return m.transfer[static_cast<size_t>(k * m.rows + j)]; }
    double delay(int32_t k, int64_t j) const { return delays ? m.delay[static_cast<size_t>(k * m.rows + j)] : 0.0; }
    bool no_delays() const { return !delays; }  // engine_eval.h has_no_delays
  };
  struct IdealCost {
    const Ideal& id;
    double dur(int32_t k, int64_t) const { return id.dur[static_cast<size_t>(k)]; }
    double transfer(int32_t k, int64_t) const { return id.transfer[static_cast<size_t>(k)]; }
    double delay(int32_t, int64_t) const { return 0.0; }
    bool no_delays() const { return true; }
  };
  // Measured where `keep(k, row)`, ideal elsewhere; no launch delays. `row_of(j)` maps a local
  // row to a trace row (-1: an ideal row).
  template <class Keep, class RowOf>
  struct MixedCost {
    const Measured& m;
    const Ideal& id;
    Keep keep;
    RowOf row_of;
    double dur(int32_t k, int64_t j) const {
      const int64_t r = row_of(j);
      return r >= 0 && keep(k, r) ? m.dur[static_cast<size_t>(k * m.rows + r)] : id.dur[static_cast<size_t>(k)];
    }
    double transfer(int32_t k, int64_t j) const {
      const int64_t r = row_of(j);
      return r >= 0 && keep(k, r) ? m.transfer[static_cast<size_t>(k * m.rows + r)] : id.transfer[static_cast<size_t>(k)];
    }
    double delay(int32_t, int64_t) const { return 0.0; }
    bool no_delays() const { return true; }
  };
  template <class Keep, class RowOf>
  MixedCost<Keep, RowOf> mixed(Keep keep, RowOf row_of) const {
    return {m, ideal, keep, row_of};
  }

  // Measured where mask[op], ideal elsewhere, on every row of the full world; no launch delays.
  // The same values as mixed() with keep(k, r) = mask[k], and a term of an ideal op the same on
  // every lane: fill_lanes gives those to the engine's term source at once (engine_eval.h).
  struct OpMaskCost {
    const Measured& m;
    const Ideal& id;
    const std::vector<char>& mask;
    double dur(int32_t k, int64_t j) const {
      return mask[static_cast<size_t>(k)] ? m.dur[static_cast<size_t>(k * m.rows + j)] : id.dur[static_cast<size_t>(k)];
    }
    double transfer(int32_t k, int64_t j) const {
      return mask[static_cast<size_t>(k)] ? m.transfer[static_cast<size_t>(k * m.rows + j)] : id.transfer[static_cast<size_t>(k)];
    }
    double delay(int32_t, int64_t) const { return 0.0; }
    bool no_delays() const { return true; }
    // Lanes j0, j0 + stride, … (n) of field f of op k, when they are one value: an ideal op's.
    bool fill_lanes(ViewField f, int32_t k, int64_t, int64_t, int32_t n, double* out) const {
      double x = 0.0;
      if (f == ViewField::DUR || f == ViewField::TRANSFER) {
        if (mask[static_cast<size_t>(k)]) return false;
        x = f == ViewField::DUR ? id.dur[static_cast<size_t>(k)] : id.transfer[static_cast<size_t>(k)];
      }
      std::fill(out, out + n, x);
      return true;
    }
  };
  std::vector<double> run_ops(const std::vector<char>& mask) {
    auto out = eval(g, worlds, OpMaskCost{m, ideal, mask}, steps(), job.dp);
    tick();
    return out;
  }
  // The ops of `pred(op)` as a mask.
  std::vector<char> ops_where(auto pred) const {
    std::vector<char> mask(job.ops.size());
    for (size_t k = 0; k < job.ops.size(); ++k) mask[k] = pred(job.ops[k]) ? 1 : 0;
    return mask;
  }

  std::vector<double> run_full(auto keep) {
    auto out = eval(g, worlds, mixed(keep, [](int64_t j) { return j; }), steps(), job.dp);
    tick();
    return out;
  }
};

double ratio_of_means(const std::vector<double>& a, const std::vector<double>& b) {
  return mean(a) / mean(b);
}

void attribute(const std::vector<double>& sim, const std::vector<double>& ideal, const Job& job, const std::string& label,
               Attribution& total, std::map<int32_t, Attribution>& per_step) {
  total[label] = ratio_of_means(sim, ideal);
  for (size_t s = 0; s < sim.size(); ++s) per_step[job.steps[s]][label] = sim[s] / ideal[s];
}

}  // namespace

namespace {

WhatIfResult analyze_job(Job job, std::vector<std::string> notes, const WhatIfOptions& opts) {
  WhatIfResult res;
  res.notes = std::move(notes);
  res.notes.insert(res.notes.end(), job.notes.begin(), job.notes.end());
  Graph g = lift_graph(job, res.notes);
  // The counterfactual's graph, lifted while the table still holds its times (measure frees them).
  std::optional<Graph> g2;
  if (opts.reduce_grad && *opts.reduce_grad != ReducePolicy::NONE)
    g2 = lift_graph(job, res.notes, *opts.reduce_grad == ReducePolicy::ASYNC ? Placement::ASYNC : Placement::INLINE);
  res.dp = job.dp;
  res.pp = job.pp;
  res.vpp = job.vpp;
  res.ops = job.trace_ops;
  res.graph_ops = static_cast<int64_t>(job.ops.size());
  // The lifted worlds (engine_eval.h), verified whatever the evaluator: every figure is the
  // engine's on these programs (the graph evaluator's are the same, docs/whatif.md "Evaluation on
  // the engine"), so they are figures of verified programs. The full world and the reduced one
  // (which the DP-rank attribution and the ideal run on); the graph's own rewrite of the reductions
  // (graph_ms) as its full world.
  EngineWorlds worlds = lift_worlds(job, g, res.notes, "whatif: the lifted programs", true);
  EngineWorlds worlds2;
  if (g2) worlds2 = lift_worlds(job, *g2, res.notes, "whatif: the lifted programs with the reductions re-placed", false);
  res.lifted.programs = static_cast<int64_t>(worlds.full->gp.set.programs.size());
  res.lifted.instructions = worlds.full->gp.instructions();
  for (PlatformKind k : worlds.full->verified_under) res.lifted.verified_under.emplace_back(to_string(k));
  res.notes.push_back(fmt::format(
      "lifted programs: {} ranks, {} instructions (one step's: every step runs these programs with its own costs), "
      "verified under {}{}{}; figures by the {} evaluator",
      res.lifted.programs, res.lifted.instructions, fmt::join(res.lifted.verified_under, ", "),
      worlds.reduced ? fmt::format(", and the reduced world of two DP rows ({} ranks)",
                                   worlds.reduced->gp.set.programs.size())
                     : std::string(),
      worlds2.full ? ", and the graph's rewrite of the reductions (graph_ms)" : "",
      opts.evaluator == Evaluator::ENGINE ? "engine" : "graph"));

  Analysis a{job, g, opts, {}, {}};
  a.worlds = &worlds;
  a.measure(res.notes);
  if (a.on_engine() && a.m.negative > 0)
    res.notes.push_back(fmt::format("{} transfer times and launch delays slightly below 0 (down to {:.6f} ms; the trace's "
                                    "rounding) are taken as 0 by the engine (docs/whatif.md \"Negative costs\")",
                                    a.m.negative, a.m.most_negative));
  a.make_ideal();
  std::vector<std::string> labels;
  for (const TemplateOp& op : job.ops) {
    std::string l(label_of(op.type));
    if (std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
  }
  a.sims_total = 3 + job.dp + job.pp + static_cast<int64_t>(labels.size()) + 4;

  const int32_t S = a.steps();
  const auto resim = a.eval(g, a.worlds, Analysis::MeasuredCost{a.m, true}, S, job.dp, nullptr, nullptr, false);
  a.tick();
  const auto nodelay = a.eval(g, a.worlds, Analysis::MeasuredCost{a.m, false}, S, job.dp);
  a.tick();
  EngineResult ideal_engine;
  SimRun ideal_graph;
  const double ideal_ms = a.eval(g, a.worlds, Analysis::IdealCost{a.ideal}, 1, 1, &ideal_engine, &ideal_graph).front();
  a.tick();
  const std::vector<double> ideal(static_cast<size_t>(S), ideal_ms);
  // Each template op's ideal start and end on DP rank 0 (row 0 of the engine's world).
  std::vector<double> ideal_start(job.ops.size()), ideal_end(job.ops.size());
  if (a.on_engine()) {
    const EngineWorld& w = worlds.two_rows();
    for (size_t p = 0; p < w.gp.set.programs.size(); ++p) {
      if (w.gp.set.programs[p].rank.v % w.gp.dp != 0) continue;
      for (size_t i = 0; i < w.gp.op_of[p].size(); ++i) {
        const int32_t k = w.gp.op_of[p][i];
        if (k < 0) continue;
        ideal_start[static_cast<size_t>(k)] = ideal_engine.timing[p][i].start_ms;
        ideal_end[static_cast<size_t>(k)] = ideal_engine.timing[p][i].end_ms;
      }
    }
  } else {
    ideal_start = ideal_graph.start_ms;
    ideal_end = ideal_graph.end_ms;
  }

  for (int32_t s = 0; s < S; ++s) {
    StepFigures f;
    f.step = job.steps[static_cast<size_t>(s)];
    f.measured_ms = job.measured_step_ms[static_cast<size_t>(s)];
    f.resimulated_ms = resim[static_cast<size_t>(s)];
    f.nodelay_ms = nodelay[static_cast<size_t>(s)];
    f.ideal_ms = ideal[static_cast<size_t>(s)];
    f.slowdown = f.nodelay_ms / f.ideal_ms;
    res.max_resim_error = std::max(res.max_resim_error, std::abs(f.resimulated_ms - f.measured_ms) / f.measured_ms);
    res.steps.push_back(f);
  }
  res.slowdown = ratio_of_means(nodelay, ideal);
  res.launch_slowdown = ratio_of_means(job.measured_step_ms, nodelay);
  res.launch_delay_share = 1.0 - mean(nodelay) / mean(job.measured_step_ms);
  for (int32_t k = 0; k < a.K(); ++k) {
    const TemplateOp& op = job.ops[static_cast<size_t>(k)];
    const std::string lane = is_p2p(op.type) ? std::string(name_of(op.type))
                             : (is_compute(op.type) || op.type == OpType::OPTIMIZER || op.type == OpType::GC) ? "compute"
                                                                                                            : "dp-comm";
    res.ideal_timeline.push_back({op.stage, lane, fmt::format("{} #{}", name_of(op.type), op.seq),
                                  ideal_start[static_cast<size_t>(k)], ideal_end[static_cast<size_t>(k)]});
  }

  const int32_t dp = job.dp;
  const double tori = mean(nodelay), tideal = mean(ideal);
  // M_S: idealize the last stage.
  {
    const int32_t last = job.pp - 1;
    const auto rem = a.run_ops(a.ops_where([&](const TemplateOp& op) { return op.stage != last; }));
    const auto add = a.run_ops(a.ops_where([&](const TemplateOp& op) { return op.stage == last; }));
    res.m_s = (tori - mean(rem)) / (tori - tideal);
    res.m_s_add = (mean(add) - tideal) / (tori - tideal);
  }
  if (opts.reduce_grad && *opts.reduce_grad != ReducePolicy::NONE) {
    const bool async = *opts.reduce_grad == ReducePolicy::ASYNC;
    WhatIfResult::Prediction pr;
    pr.policy = async ? "async" : "inline";
    // The graph's own rewrite (graph_ms, kept beside the prediction), by the chosen evaluator.
    pr.graph_ms = mean(a.eval(*g2, &worlds2, Analysis::MeasuredCost{a.m, false}, S, job.dp));
    pr.graph_ideal_ms = a.eval(*g2, &worlds2, Analysis::IdealCost{a.ideal}, 1, 1).front();
    // The prediction: the compiler's place-reductions on the lifted programs (graph_counterfactual.h).
    predict_by_pass(job, worlds.full->gp, *opts.reduce_grad, S, Analysis::MeasuredCost{a.m, false},
                    Analysis::IdealCost{a.ideal}, pr, res.notes);
    pr.traced_ms = mean(nodelay);
    pr.traced_ideal_ms = mean(ideal);
    res.predicted = pr;
  }
  if (res.slowdown >= opts.decompose_threshold) {
    res.attributed = true;
    for (int32_t d = 0; d < dp; ++d) {
      std::vector<double> sim;
      if (dp == 1) {
        sim = a.run_full([](int32_t, int64_t) { return true; });
      } else {
        // Every other DP rank is ideal, and ideal rows are identical: one stands for all.
        auto cost = a.mixed([](int32_t, int64_t) { return true; },
                            [dp, d](int64_t j) { return j % 2 == 0 ? (j / 2) * dp + d : int64_t{-1}; });
        sim = a.eval(g, a.worlds, cost, S, 2);
        a.tick();
      }
      attribute(sim, ideal, job, std::to_string(d), res.by_dp_rank, res.by_dp_rank_per_step);
    }
    for (int32_t p = 0; p < job.pp; ++p) {
      const auto sim = a.run_ops(a.ops_where([&](const TemplateOp& op) { return op.stage == p; }));
      attribute(sim, ideal, job, std::to_string(p), res.by_stage, res.by_stage_per_step);
    }
    for (const std::string& l : labels) {
      const auto sim = a.run_ops(a.ops_where([&](const TemplateOp& op) { return label_of(op.type) == l; }));
      attribute(sim, ideal, job, l, res.by_op_type, res.by_op_type_per_step);
    }
    // Worker scores and M_W: idealize the top 3 % of workers (at least one).
    res.worker_score.assign(static_cast<size_t>(dp), std::vector<double>(static_cast<size_t>(job.pp)));
    std::vector<std::tuple<double, int32_t, int32_t>> ranked;  // (score, stage, dp)
    for (int32_t d = 0; d < dp; ++d) {
      for (int32_t p = 0; p < job.pp; ++p) {
        const double sc = std::min(res.by_dp_rank[std::to_string(d)], res.by_stage[std::to_string(p)]);
        res.worker_score[static_cast<size_t>(d)][static_cast<size_t>(p)] = sc;
        ranked.emplace_back(sc, p, d);
      }
    }
    // Highest score first; ties to the lower global rank (stage-major, then DP rank).
    std::sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) {
      if (std::get<0>(x) != std::get<0>(y)) return std::get<0>(x) > std::get<0>(y);
      return std::make_pair(std::get<1>(x), std::get<2>(x)) < std::make_pair(std::get<1>(y), std::get<2>(y));
    });
    const auto workers = static_cast<int64_t>(ranked.size());
    const int64_t n = (workers * 3 + 99) / 100;
    std::vector<char> chosen(static_cast<size_t>(dp * job.pp), 0);
    for (int64_t i = 0; i < n; ++i) {
      const auto [sc, p, d] = ranked[static_cast<size_t>(i)];
      chosen[static_cast<size_t>(d * job.pp + p)] = 1;
      res.m_w_workers.emplace_back(d, p);
    }
    const auto is_chosen = [&](int32_t k, int64_t r) {
      return chosen[static_cast<size_t>((r % dp) * job.pp + job.ops[static_cast<size_t>(k)].stage)] != 0;
    };
    const auto rem = a.run_full([&](int32_t k, int64_t r) { return !is_chosen(k, r); });
    const auto add = a.run_full([&](int32_t k, int64_t r) { return is_chosen(k, r); });
    res.m_w = (tori - mean(rem)) / (tori - tideal);
    res.m_w_add = (mean(add) - tideal) / (tori - tideal);
  } else {
    res.m_s.reset(), res.m_s_add.reset();  // M_W, M_S only with the attribution (WhatIfResult)
    res.notes.push_back(fmt::format("S = {:.4f} is below the attribution threshold {:.4f}: no attribution, no M_W, "
                                    "no M_S",
                                    res.slowdown, opts.decompose_threshold));
  }
  if (opts.check_programs) {
    a.check.programs = static_cast<int64_t>(worlds.full->gp.set.programs.size());
    a.check.instructions = worlds.full->gp.instructions();
    res.programs_check = a.check;
  }
  return res;
}

}  // namespace

WhatIfResult analyze(const analyze::TimerTrace& trace, const WhatIfOptions& opts) {
  return analyze_job(build_job(trace, opts.steps), trace.notes, opts);
}

WhatIfResult analyze_paths(const std::vector<std::string>& paths, const WhatIfOptions& opts) {
  if (paths.empty()) throw analyze::TraceError("whatif: no input path given");
  Job job;
  std::vector<std::string> notes;
  {
    analyze::TimerTrace trace;  // freed once the table holds its times
    if (const auto twice = analyze::repeated_path(paths))  // a file twice would hold every op twice
      throw analyze::TraceError(fmt::format("whatif: {} is given twice (its ops would be read twice); give each "
                                            "timeline once",
                                            *twice));
    for (const auto& p : paths) analyze::read_timer_trace(p, trace);
    job = build_job(trace, opts.steps);
    notes = std::move(trace.notes);
  }
  return analyze_job(std::move(job), std::move(notes), opts);
}

}  // namespace ppstream::whatif
