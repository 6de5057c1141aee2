// tune_json / tune_table: the search's outputs (docs/tune.md defines every figure).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "ppstream/sim/memory.h"
#include "ppstream/tune/tune.h"
#include "tune/scoring.h"

namespace ppstream::tune {
namespace {

using nlohmann::json;

json plan_json(const PlanResult& p) {
  json settings = json::object();
  for (const auto& [k, v] : p.settings) settings[k] = v;
  return {{"label", p.label},
          {"settings", std::move(settings)},
          {"trials", p.trials},
          {"p50_ms", p.p50_ms},
          {"p99_ms", p.p99_ms},
          {"mean_ms", p.mean_ms},
          {"score_ms", p.score_ms},
          {"peak_memory_bytes", p.peak_memory_bytes},
          {"peak_memory_bytes_per_rank", p.peak_per_rank_bytes},
          {"over_budget", p.over_budget},
          {"measured_instructions", p.measured_instructions},
          {"derived_instructions", p.derived_instructions},
          {"unmeasured_instructions", p.unmeasured_instructions}};
}

int64_t total(const std::map<std::string, int64_t>& by_kind) {
  int64_t n = 0;
  for (const auto& [kind, k] : by_kind) n += k;
  return n;
}

std::string by_kind_text(const std::map<std::string, int64_t>& by_kind) {
  std::string out;
  for (const auto& [kind, n] : by_kind) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", kind, n);
  return out;
}

// From a trace: where the listed plans' costs came from (every instruction not measured is counted).
std::string origins_text(const TuneReport& r) {
  std::string out = fmt::format("costs and tails from {} measured step(s) of {} (config {}): per (rank, op kind, stage) "
                                "means; arrival delays of a measured step drawn per rank and trial (seed {})\n",
                                r.trace_steps, fmt::join(r.trace_paths, ", "), r.trace_config_path, r.trace_seed);
  auto line = [&](const std::string& tag, const PlanResult& p) {
    const int64_t d = total(p.derived_instructions), u = total(p.unmeasured_instructions);
    if (d == 0 && u == 0) return;
    out += fmt::format("{} {}: {} instructions measured", tag, p.label, p.measured_instructions);
    if (d) out += fmt::format(", {} derived from measured ones ({})", d, by_kind_text(p.derived_instructions));
    if (u) out += fmt::format(", {} never measured, from the config's cost model ({})", u, by_kind_text(p.unmeasured_instructions));
    out += "\n";
  };
  for (size_t n = 0; n < r.plans.size(); ++n) line(fmt::format("plan {}", n + 1), r.plans[n]);
  line("baseline", r.as_written);
  for (const PlanResult& b : r.baselines) line("baseline", b);
  return out;
}

double change(double x, double base) { return base > 0 ? (x - base) / base : 0.0; }

// `b`'s objective over its first n trials (sim::summarize, nearest-rank percentiles).
double score_over(const PlanResult& b, int32_t n, Objective o) {
  if (n >= b.trials || static_cast<size_t>(n) > b.step_time_ms.size() || n < 1) return b.score_ms;
  const sim::TrialStats s = tune_detail::stats_of(b.step_time_ms, n);
  switch (o) {
    case Objective::P99: return s.p99_ms;
    case Objective::P50: return s.p50_ms;
    case Objective::MEAN: return s.mean_ms;
  }
  return s.p99_ms;
}

}  // namespace

Comparison compare(const TuneReport& r, const PlanResult& p) {
  Comparison c;
  c.trials = p.trials;
  const double as_written = score_over(r.as_written, p.trials, r.objective);
  c.baseline_score_ms.emplace_back(r.as_written.label, as_written);
  c.vs_as_written = change(p.score_ms, as_written);
  for (const PlanResult& b : r.baselines) {
    const double s = score_over(b, p.trials, r.objective);
    c.baseline_score_ms.emplace_back(b.label, s);
    if (c.best.empty() || s < c.best_score_ms) c.best = b.label, c.best_score_ms = s;
  }
  if (!c.best.empty()) c.vs_best = change(p.score_ms, c.best_score_ms);
  return c;
}

std::string tune_json(const TuneReport& r, int indent) {
  json j = {{"format", "ppstream.tune/1"},
            {"objective", to_string(r.objective)},
            {"trials", r.trials},
            {"memory_budget_bytes", r.memory_budget_bytes ? json(*r.memory_budget_bytes) : json(nullptr)},
            {"candidates", r.candidates},
            {"evaluated", r.evaluated},
            {"verified", r.verified},
            {"simulations", r.simulations},
            {"trial_runs", r.trial_runs},
            {"stopped_by_budget", r.stopped_by_budget},
            {"wall_s", r.wall_s},
            {"time_to_best_s", r.time_to_best_s},
            {"cost_source", r.cost_source}};
  if (r.cost_source == "trace")
    j["trace"] = {{"paths", r.trace_paths}, {"config", r.trace_config_path}, {"steps", r.trace_steps}, {"seed", r.trace_seed}};
  json space = json::array();
  for (const Dimension& d : r.space) space.push_back({{"key", d.key}, {"values", d.values}});
  j["space"] = std::move(space);
  json plans = json::array();
  for (const PlanResult& p : r.plans) {
    json j2 = plan_json(p);
    const Comparison c = compare(r, p);
    json vs = json::object(), scores = json::object();
    for (const auto& [label, s] : c.baseline_score_ms) vs[label] = change(p.score_ms, s), scores[label] = s;
    j2["change_ratio"] = std::move(vs);
    j2["compared_trials"] = c.trials;
    j2["baseline_score_ms"] = std::move(scores);
    plans.push_back(std::move(j2));
  }
  j["plans"] = std::move(plans);
  j["as_written"] = plan_json(r.as_written);
  json base = json::array();
  for (const PlanResult& b : r.baselines) base.push_back(plan_json(b));
  j["baselines"] = std::move(base);
  if (!r.plans.empty())
    if (const Comparison c = compare(r, r.plans.front()); !c.best.empty())
      j["best_vs_best_baseline"] = {{"baseline", c.best}, {"change_ratio", c.vs_best}, {"compared_trials", c.trials},
                                    {"baseline_score_ms", c.best_score_ms}};
  j["notes"] = r.notes;
  json log = json::array();
  for (const LogEntry& e : r.log)
    log.push_back({{"plan", e.plan}, {"rung", e.rung}, {"trials", e.trials}, {"score_ms", e.score_ms}, {"outcome", e.outcome}});
  j["log"] = std::move(log);
  return j.dump(indent);
}

std::string tune_table(const TuneReport& r) {
  std::string out = fmt::format("tune: objective {} over {} trials; {} points, {} verified, {} evaluated, {} scorings, {} trial runs, {:.1f} s{}\n",
                                to_string(r.objective), r.trials, r.candidates, r.verified, r.evaluated, r.simulations, r.trial_runs, r.wall_s,
                                r.stopped_by_budget ? " (stopped at --budget-s: best so far)" : "");
  if (r.memory_budget_bytes) out += fmt::format("memory budget {} per rank\n", sim::format_bytes(*r.memory_budget_bytes));
  for (const std::string& n : r.notes) out += "note: " + n + "\n";
  const bool has_baselines = !r.baselines.empty();
  out += fmt::format("{:<4}{:>10}{:>10}{:>10}{:>8}{:>12}{:>10}{:>10}  {}\n", "#", "p50_ms", "p99_ms", "mean_ms", "trials",
                     "peak_mem", "vs_cfg", "vs_base", "settings");
  // vs_cfg / vs_base over the row's own trials: the baselines' first `trials` draws.
  auto line = [&](const std::string& tag, const PlanResult& p) {
    const Comparison c = compare(r, p);
    out += fmt::format("{:<4}{:>10.3f}{:>10.3f}{:>10.3f}{:>8}{:>12}{:>+9.2f}%{:>10}  {}\n", tag, p.p50_ms, p.p99_ms, p.mean_ms,
                       p.trials, sim::format_bytes(p.peak_memory_bytes), 100 * c.vs_as_written,
                       has_baselines ? fmt::format("{:+.2f}%", 100 * c.vs_best) : std::string("-"), p.label);
  };
  for (size_t n = 0; n < r.plans.size(); ++n) line(std::to_string(n + 1), r.plans[n]);
  out += "baselines (the config as written, and its reduction policies):\n";
  line("-", r.as_written);
  for (const PlanResult& b : r.baselines) line("-", b);
  if (!r.plans.empty()) {
    out += "peak memory per rank of plan 1:";
    for (size_t k = 0; k < r.plans.front().peak_per_rank_bytes.size(); ++k)
      out += fmt::format(" r{} {}", k, sim::format_bytes(r.plans.front().peak_per_rank_bytes[k]));
    out += "\n";
  } else {
    out += r.evaluated > 0 ? "no plan in the space is within the memory budget\n" : "no plan in the space was scored\n";
  }
  // Plans set aside before scoring, by reason (the first of each kind named; --json has all).
  std::map<std::string, std::pair<int64_t, std::string>> aside;
  for (const LogEntry& e : r.log) {
    if (e.rung >= 0) continue;
    const std::string kind = e.outcome.substr(0, e.outcome.find_first_of(":"));
    auto& [n, first] = aside[kind.rfind("duplicate", 0) == 0 ? "duplicate" : kind];
    if (n++ == 0) first = e.plan + ": " + e.outcome;
  }
  // The reason is the line's point (a config rule, the verifier's violation): kept whole up to a
  // cap far above any one config error, and a cut says so.
  constexpr size_t kCap = 1000;
  for (const auto& [kind, v] : aside)
    out += fmt::format("set aside, {}: {} (first: {})\n", kind, v.first,
                       v.second.size() <= kCap ? v.second : v.second.substr(0, kCap) + " … (--json's log has it whole)");
  if (r.cost_source == "trace") out += origins_text(r);
  // The comparisons' trial counts: every listed trial count, the baselines' score over it.
  std::vector<int32_t> counts;
  for (const PlanResult& p : r.plans)
    if (std::find(counts.begin(), counts.end(), p.trials) == counts.end()) counts.push_back(p.trials);
  if (counts.empty() || counts.front() != r.trials) counts.insert(counts.begin(), r.trials);
  for (int32_t n : counts) {
    PlanResult probe;
    probe.trials = n;
    const Comparison c = compare(r, probe);
    const std::string over = n == r.trials ? fmt::format("over {} trials", n)
                                           : fmt::format("rows over {} trials: against the baselines' first {} trials (the same draws)", n, n);
    out += fmt::format("vs_cfg / vs_base {}: as written {} {:.3f} ms", over, to_string(r.objective), c.baseline_score_ms.front().second);
    if (!c.best.empty()) out += fmt::format(", best baseline {} {:.3f} ms", c.best, c.best_score_ms);
    out += "\n";
  }
  return out;
}

}  // namespace ppstream::tune
