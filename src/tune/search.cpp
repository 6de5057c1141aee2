// The search: enumerate the space, compile and verify each plan, then successive halving on
// trials (every plan's trial t is the same straggler draw: common random numbers), scored by
// `simulate`; the memory budget drops a plan at any rung; --budget-s stops with the best so far.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>

#include "ppstream/engine/engine.h"
#include "ppstream/lower/lower.h"
#include "ppstream/program/format.h"
#include "ppstream/tune/tune.h"
#include "ppstream/verify/verify.h"
#include "tune/scoring.h"

namespace ppstream::tune {
namespace {

using Clock = std::chrono::steady_clock;

// A plan of the space once compiled and verified.
struct Candidate {
  Settings settings;        // differing from the config as written
  std::string label;
  PipelineConfig cfg;
  std::unique_ptr<tune_detail::Scoring> scoring;  // compiled once, trials kept
  std::optional<PlanResult> result;  // the latest scoring (most trials)
  double first_scored_s = 0, last_scored_s = 0;
};

std::string label_of(const Settings& s) {
  if (s.empty()) return "(as written)";
  std::string out;
  for (const auto& [k, v] : s) out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, v);
  return out;
}

// Every point of the space, in odometer order (the last axis changes fastest).
std::vector<Settings> points(const std::vector<Dimension>& space) {
  std::vector<Settings> out{{}};
  for (const Dimension& d : space) {
    std::vector<Settings> next;
    for (const Settings& s : out)
      for (const std::string& v : d.values) {
        Settings t = s;
        t.emplace_back(d.key, v);
        next.push_back(std::move(t));
      }
    out = std::move(next);
  }
  return out;
}

double objective_of(Objective o, const sim::TrialStats& t) {
  switch (o) {
    case Objective::P99: return t.p99_ms;
    case Objective::P50: return t.p50_ms;
    case Objective::MEAN: return t.mean_ms;
  }
  return t.p99_ms;
}

// Compiles (verifying after every pass) and verifies the result under the three verification
// profiles; returns the violations' text, empty when the plan verifies.
std::string verify_plan(const PipelineConfig& c, std::string& programs_text) {
  const ProgramSet set = compile(c);  // throws std::logic_error naming the pass on a broken IR
  VerifyOptions vo;
  vo.platforms = parse_platform_list("all");
  const std::vector<Violation> v = verify(set, vo);
  programs_text = to_text(set);
  if (v.empty()) return {};
  return fmt::format("{} violations, first: {}", v.size(), v.front().message);
}

class Search {
 public:
  Search(const PipelineConfig& cfg, const TuneOptions& o, tune_detail::ScoringFactory make, tune_detail::ElapsedClock clock)
      : base_(cfg), o_(o), make_(std::move(make)), clock_(std::move(clock)), t0_(Clock::now()) {}

  TuneReport run() {
    check_options();
    rep_.objective = o_.objective;
    rep_.trials = o_.trials;
    rep_.memory_budget_bytes = o_.memory_budget_bytes;
    rep_.space = o_.space.empty() ? default_space(base_) : o_.space;
    leave_out_untrainable();
    base_yaml_ = to_yaml(base_);
    rep_.as_written = score_once(base_, {}, "as written", /*as_written=*/true);
    baselines();
    collect();
    halve();
    finish();
    return std::move(rep_);
  }

 private:
  // A config with a train: section is meant for `ppstream train`: the schedules the MindSpore
  // runtime cannot run leave the default space (train's own rule, cli/cmd_train.cpp
  // refuse_split_backward: a schedule that splits_backward), with a note saying which and why;
  // one named in --space is an error (the written plan would be refused by train).
  void leave_out_untrainable() {
    if (base_.extra_sections.find("train") == base_.extra_sections.end()) return;
    for (Dimension& d : rep_.space) {
      if (d.key != "schedule") continue;
      std::vector<std::string> kept, left;
      for (const std::string& v : d.values) {
        const auto k = parse_schedule_kind(v);
        (k && splits_backward(*k) ? left : kept).push_back(v);
      }
      if (left.empty()) return;
      const std::string why = fmt::format(
          "{} split{} the backward into I and W, and the MindSpore runtime runs only the fused backward B (docs/runtime.md)",
          fmt::join(left, ", "), left.size() == 1 ? "s" : "");
      if (!o_.space.empty())
        throw std::invalid_argument(fmt::format(
            "tune --space schedule={}: the config has a train: section (it is meant for `ppstream train`), and {}; "
            "give schedules train runs ({}), or tune a copy of the config without its train: section to study them",
            fmt::join(d.values, ","), why, kept.empty() ? std::string("1f1b, interleaved_1f1b") : fmt::format("{}", fmt::join(kept, ", "))));
      rep_.notes.push_back(fmt::format("the config has a train: section, so the space leaves out the schedules "
                                       "`ppstream train` refuses (--apply writes a plan it runs): {}",
                                       why));
      d.values = std::move(kept);
    }
  }
  double elapsed() const { return clock_ ? clock_() : std::chrono::duration<double>(Clock::now() - t0_).count(); }
  bool out_of_time() {
    if (o_.budget_s && elapsed() >= *o_.budget_s) rep_.stopped_by_budget = true;
    return rep_.stopped_by_budget;
  }
  void check_options() const {
    if (o_.trials < 1) throw std::invalid_argument(fmt::format("tune --trials {}: expected at least 1", o_.trials));
    if (o_.eta < 2) throw std::invalid_argument(fmt::format("tune: eta {} must be at least 2", o_.eta));
    if (o_.min_trials < 1) throw std::invalid_argument("tune: min_trials must be at least 1");
    if (o_.budget_s && !(*o_.budget_s > 0)) throw std::invalid_argument("tune --budget-s: expected a time > 0 s");
    if (o_.memory_budget_bytes && !(*o_.memory_budget_bytes >= 1 && std::isfinite(*o_.memory_budget_bytes) &&
                                    std::floor(*o_.memory_budget_bytes) == *o_.memory_budget_bytes))
      throw std::invalid_argument(fmt::format("tune --memory-budget {}: expected a whole number of bytes > 0", *o_.memory_budget_bytes));
    if (!o_.space.empty()) check_space(o_.space, base_);
  }

  // Trials 0..trials-1 of `plan` (the same draws for every plan), extending what it has run.
  PlanResult score(tune_detail::Scoring& plan, const PipelineConfig& c, int32_t trials, const Settings& settings,
                   const std::string& label) {
    const int32_t before = plan.trials();
    const sim::TrialStats st = plan.extend(trials);
    ++rep_.simulations;
    rep_.trial_runs += std::max(0, trials - before);
    PlanResult p;
    p.settings = settings;
    p.label = label;
    p.trials = trials;
    p.p50_ms = st.p50_ms, p.p99_ms = st.p99_ms, p.mean_ms = st.mean_ms;
    p.score_ms = objective_of(o_.objective, st);
    p.step_time_ms = st.step_time_ms;
    p.peak_memory_bytes = plan.peak_memory_bytes();
    p.over_budget = o_.memory_budget_bytes && p.peak_memory_bytes > *o_.memory_budget_bytes;
    const tune_detail::CostOrigins origins = plan.origins();
    p.measured_instructions = origins.measured;
    p.derived_instructions = origins.derived;
    p.unmeasured_instructions = origins.unmeasured;
    p.yaml = to_yaml(c);
    if (o_.progress) o_.progress(rep_.simulations, planned_, label);
    return p;
  }
  // A plan scored once over every trial (the config as written, the baselines).
  PlanResult score_once(const PipelineConfig& c, const Settings& settings, const std::string& label, bool as_written = false) {
    const std::unique_ptr<tune_detail::Scoring> plan = make_(c);
    // The plan space never changes the cost: section, so the config's memory model is every plan's.
    if (as_written && o_.memory_budget_bytes && !plan->models_memory())
      throw std::invalid_argument(
          "tune --memory-budget: the config's cost: section gives the memory model no byte size (stash_bytes_per_layer, "
          "activation_bytes, param_bytes_per_layer, grad_bytes_per_layer and the memory keys are all 0 or absent; "
          "docs/simulate.md \"Memory\"), so every plan's peak is 0 B and a budget cannot bind: set them, or drop --memory-budget");
    PlanResult p = score(*plan, c, o_.trials, settings, label);
    p.peak_per_rank_bytes = plan->peak_per_rank_trial0();
    return p;
  }
  // The three policy baselines as written (the comparison set).
  void baselines() {
    if (base_.mode == DPMode::NONE) return;
    const std::vector<std::pair<std::string, Settings>> b = {
        {"inline", {{"data_parallel.reduce_grad", "inline"}}},
        {"async", {{"data_parallel.reduce_grad", "async"}, {"data_parallel.sync_last_reduce", "false"}}},
        {"async + sync_last_reduce", {{"data_parallel.reduce_grad", "async"}, {"data_parallel.sync_last_reduce", "true"}}}};
    for (const auto& [name, s] : b) {
      PipelineConfig c = base_;
      apply_overrides(c, s);
      rep_.baselines.push_back(score_once(c, s, name));
    }
  }

  // Phase 1: every point compiled and verified; duplicates (same programs) set aside.
  void collect() {
    const std::vector<Settings> all = points(rep_.space);
    rep_.candidates = static_cast<int64_t>(all.size());
    std::map<std::string, std::string> seen;  // programs text → the plan that has them
    for (const Settings& s : all) {
      if (out_of_time()) return;
      Settings diff;
      for (const auto& kv : s)
        if (differs(kv)) diff.push_back(kv);
      const std::string label = label_of(diff);
      PipelineConfig c = base_;
      try {
        apply_overrides(c, s);
      } catch (const ConfigError& e) {
        rep_.log.push_back({label, -1, 0, 0, fmt::format("invalid: {}", e.what())});
        continue;
      }
      std::string text;
      try {
        if (std::string why = verify_plan(c, text); !why.empty()) {
          rep_.log.push_back({label, -1, 0, 0, "does not verify: " + why});
          continue;
        }
      } catch (const std::exception& e) {
        rep_.log.push_back({label, -1, 0, 0, fmt::format("does not compile: {}", e.what())});
        continue;
      }
      ++rep_.verified;
      const auto [it, fresh] = seen.emplace(std::move(text), label);
      if (!fresh) {
        rep_.log.push_back({label, -1, 0, 0, "duplicate of " + it->second});
        continue;
      }
      try {
        std::unique_ptr<tune_detail::Scoring> scoring = make_(c);
        cands_.push_back({std::move(diff), label, std::move(c), std::move(scoring), std::nullopt, 0, 0});
      } catch (const std::exception& e) {  // verified above under every profile: not expected
        rep_.log.push_back({label, -1, 0, 0, fmt::format("does not compile: {}", e.what())});
      }
    }
  }
  // Does key=value change the config as written? (Cached: one to_yaml per distinct setting.)
  bool differs(const std::pair<std::string, std::string>& kv) {
    const std::string key = kv.first + "=" + kv.second;
    if (auto it = differs_.find(key); it != differs_.end()) return it->second;
    PipelineConfig c = base_;
    bool d = true;
    try {
      apply_override(c, kv.first, kv.second);
      d = to_yaml(c) != base_yaml_;
    } catch (const ConfigError&) {
    }
    return differs_[key] = d;
  }

  // Phase 2: rungs of trials min_trials, ×eta, …, trials; each keeps the best 1/eta (at least
  // `show`) of the plans in budget.
  void halve() {
    std::vector<size_t> alive(cands_.size());
    for (size_t k = 0; k < alive.size(); ++k) alive[k] = k;
    int32_t t = std::min(o_.min_trials, o_.trials);
    for (int32_t rung = 0; !alive.empty(); ++rung) {
      planned_ = rep_.simulations + static_cast<int64_t>(alive.size());
      std::vector<size_t> scored;
      for (size_t k : alive) {
        if (out_of_time()) break;
        Candidate& c = cands_[k];
        PlanResult p = score(*c.scoring, c.cfg, t, c.settings, c.label);
        if (!c.result) c.first_scored_s = elapsed();
        c.last_scored_s = elapsed();
        const bool over = p.over_budget;
        rep_.log.push_back({c.label, rung, t, p.score_ms, over ? "over budget" : "scored"});
        c.result = std::move(p);
        if (over) continue;
        scored.push_back(k);
      }
      if (rep_.stopped_by_budget || t == o_.trials) {
        alive = scored;
        break;
      }
      std::stable_sort(scored.begin(), scored.end(),
                       [&](size_t a, size_t b) { return cands_[a].result->score_ms < cands_[b].result->score_ms; });
      const size_t keep = std::max(static_cast<size_t>(o_.show), (scored.size() + static_cast<size_t>(o_.eta) - 1) / static_cast<size_t>(o_.eta));
      for (size_t n = keep; n < scored.size(); ++n) rep_.log.push_back({cands_[scored[n]].label, rung, t, cands_[scored[n]].result->score_ms, "pruned"});
      scored.resize(std::min(keep, scored.size()));
      alive = scored;
      t = std::min(o_.trials, t * o_.eta);
    }
  }

  // The plans to report: the furthest-evaluated ones in budget, most trials first, then score.
  void finish() {
    std::vector<size_t> order;
    for (size_t k = 0; k < cands_.size(); ++k) {
      if (!cands_[k].result) continue;
      ++rep_.evaluated;
      if (!cands_[k].result->over_budget) order.push_back(k);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const PlanResult &x = *cands_[a].result, &y = *cands_[b].result;
      if (x.trials != y.trials) return x.trials > y.trials;
      return x.score_ms < y.score_ms;
    });
    for (size_t n = 0; n < order.size() && n < static_cast<size_t>(o_.show); ++n) {
      rep_.plans.push_back(*cands_[order[n]].result);
      rep_.plans.back().peak_per_rank_bytes = cands_[order[n]].scoring->peak_per_rank_trial0();
    }
    if (!order.empty()) rep_.time_to_best_s = cands_[order.front()].last_scored_s;
    rep_.wall_s = elapsed();
  }

  const PipelineConfig& base_;
  const TuneOptions& o_;
  tune_detail::ScoringFactory make_;
  tune_detail::ElapsedClock clock_;
  Clock::time_point t0_;
  std::string base_yaml_;
  TuneReport rep_;
  std::vector<Candidate> cands_;
  std::map<std::string, bool> differs_;
  int64_t planned_ = 0;
};

}  // namespace

// What a report from a config's cost and straggler models rests on (TuneReport::notes).
static std::vector<std::string> config_notes(const PipelineConfig& cfg) {
  std::vector<std::string> out;
  if (cfg.extra_sections.find("cost") == cfg.extra_sections.end())
    out.push_back("the config has no cost: section: every plan is scored on the cost model's defaults "
                  "(docs/simulate.md \"Cost model\")");
  if (cfg.extra_sections.find("straggler") == cfg.extra_sections.end())
    out.push_back("the config has no straggler: section: no trial draws a delay, so the trials are one step "
                  "repeated and p50 = p99 = mean");
  return out;
}

TuneReport tune(const PipelineConfig& cfg, const TuneOptions& opts) {
  TuneReport r = Search(cfg, opts, [](const PipelineConfig& c) { return std::make_unique<tune_detail::PlanScoring>(c); }, {}).run();
  for (std::string& n : config_notes(cfg)) r.notes.push_back(std::move(n));
  return r;
}

}  // namespace ppstream::tune

namespace ppstream::tune_detail {
TuneReport search(const PipelineConfig& cfg, const TuneOptions& opts, ScoringFactory make, ElapsedClock clock) {
  return tune::Search(cfg, opts, std::move(make), std::move(clock)).run();
}
}  // namespace ppstream::tune_detail
