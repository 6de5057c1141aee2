// Report views of a WhatIfResult: JSON (keys in docs/whatif.md), the plain table, the heatmap SVG
// and the ideal timeline as a Chrome/Perfetto trace.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {
namespace {

nlohmann::json attribution_json(const Attribution& a) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : a) j[k] = v;
  return j;
}

nlohmann::json per_step_json(const std::map<int32_t, Attribution>& a) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [s, m] : a) j[std::to_string(s)] = attribution_json(m);
  return j;
}

std::vector<std::pair<std::string, double>> worst(const Attribution& a, size_t n) {
  std::vector<std::pair<std::string, double>> v(a.begin(), a.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  if (v.size() > n) v.resize(n);
  return v;
}

}  // namespace

std::string to_json(const WhatIfResult& r) {
  nlohmann::json j;
  j["dp"] = r.dp;
  j["pp"] = r.pp;
  j["vpp"] = r.vpp;
  j["ops"] = r.ops;
  j["graph_ops"] = r.graph_ops;
  j["ppstream_trace"] = r.ppstream_trace;
  j["slowdown"] = r.slowdown;
  j["launch_slowdown"] = r.launch_slowdown;
  j["launch_delay_share"] = r.launch_delay_share;
  j["max_resim_error"] = r.max_resim_error;
  j["verified_under"] = r.lifted.verified_under;
  j["lifted_programs"] = {{"programs", r.lifted.programs}, {"instructions", r.lifted.instructions}};
  if (r.programs_check) {
    const ProgramsCheck& c = *r.programs_check;
    j["programs_check"] = {{"programs", c.programs}, {"instructions", c.instructions}, {"engine_runs", c.runs},
                           {"max_diff_ms", c.max_diff_ms}};
  }
  j["attributed"] = r.attributed;
  j["by_dp_rank"] = attribution_json(r.by_dp_rank);
  j["by_stage"] = attribution_json(r.by_stage);
  j["by_op_type"] = attribution_json(r.by_op_type);
  if (!r.by_worker.empty()) j["by_worker"] = attribution_json(r.by_worker);
  j["by_dp_rank_per_step"] = per_step_json(r.by_dp_rank_per_step);
  j["by_stage_per_step"] = per_step_json(r.by_stage_per_step);
  j["by_op_type_per_step"] = per_step_json(r.by_op_type_per_step);
  const auto or_null = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  j["m_w"] = or_null(r.m_w);
  j["m_w_add"] = or_null(r.m_w_add);
  j["m_s"] = or_null(r.m_s);
  j["m_s_add"] = or_null(r.m_s_add);
  nlohmann::json ws = nlohmann::json::array();
  for (const auto& [d, p] : r.m_w_workers) ws.push_back({{"dp_rank", d}, {"stage", p}});
  j["m_w_workers"] = ws;
  nlohmann::json steps = nlohmann::json::array();
  for (const StepFigures& s : r.steps) {
    steps.push_back({{"step", s.step},
                     {"measured_ms", s.measured_ms},
                     {"resimulated_ms", s.resimulated_ms},
                     {"nodelay_ms", s.nodelay_ms},
                     {"ideal_ms", s.ideal_ms},
                     {"slowdown", s.slowdown}});
  }
  j["steps"] = steps;
  if (r.predicted) {
    const auto& p = *r.predicted;
    j["predicted_step_ms"] = {{"policy", p.policy},
                              {"measured_costs_ms", p.measured_costs_ms},
                              {"ideal_costs_ms", p.ideal_costs_ms},
                              {"traced_ms", p.traced_ms},
                              {"traced_ideal_ms", p.traced_ideal_ms},
                              {"per_step_ms", p.per_step_ms}};
    auto& pj = j["predicted_step_ms"];
    if (!p.traced_policy.empty()) pj["traced_policy"] = p.traced_policy;
    if (p.instructions > 0) pj["instructions"] = p.instructions;
    if (p.graph_ms) pj["graph_ms"] = *p.graph_ms;
    if (p.graph_ideal_ms) pj["graph_ideal_ms"] = *p.graph_ideal_ms;
  }
  j["notes"] = r.notes;
  return j.dump(2) + "\n";
}

std::string to_text(const WhatIfResult& r) {
  std::string out =
      r.ppstream_trace
          ? fmt::format("what-if: {} DP x {} PP (vpp {}), {} step{}, {} slices read, {} instructions per DP replica\n",
                        r.dp, r.pp, r.vpp, r.steps.size(), r.steps.size() == 1 ? "" : "s", r.ops, r.graph_ops)
          : fmt::format("what-if: {} DP x {} PP (vpp {}), {} step{}, {} timer ops ({} per step and DP rank)\n", r.dp,
                        r.pp, r.vpp, r.steps.size(), r.steps.size() == 1 ? "" : "s", r.ops, r.graph_ops);
  // A negative share is no share: the re-simulation without launch delays is longer than the
  // measured step (docs/whatif.md "launch_delay_share").
  const std::string share =
      r.launch_delay_share >= 0
          ? fmt::format("launch delay share = {:.2f} %", 100 * r.launch_delay_share)
          : fmt::format("launch delay share: none (nodelay is {:.2f} % longer than measured)",
                        100 * (r.launch_slowdown > 0 ? 1 / r.launch_slowdown - 1 : 0));
  out += fmt::format("slowdown S = {:.4f}   launch_slowdown = {:.4f}   {}   re-simulation error max = {:.3f} %\n",
                     r.slowdown, r.launch_slowdown, share, 100 * r.max_resim_error);
  if (!r.lifted.verified_under.empty()) {
    std::string under;
    for (const auto& p : r.lifted.verified_under) under += (under.empty() ? "" : ", ") + p;
    out += fmt::format("lifted programs: {} ranks, {} instructions per step, verified under {}\n", r.lifted.programs,
                       r.lifted.instructions, under);
  }
  if (r.programs_check)
    out += fmt::format("check: {} engine runs beside the graph evaluator, largest difference {:.3g} ms\n",
                       r.programs_check->runs, r.programs_check->max_diff_ms);
  if (r.attributed) {
    const auto fig = [](const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : std::string("n/a (no slowdown)"); };
    out += fmt::format("M_W = {} (idealizing {} worker{})   M_S = {}\n", fig(r.m_w), r.m_w_workers.size(),
                       r.m_w_workers.size() == 1 ? "" : "s", fig(r.m_s));
    const auto table = [&](const char* title, const char* col, const Attribution& a) {
      out += fmt::format("\n{}\n  {:<28} {:>10}\n", title, col, "slowdown");
      for (const auto& [k, v] : worst(a, 5)) out += fmt::format("  {:<28} {:>10.4f}\n", k, v);
    };
    table("worst DP ranks (that rank measured, the rest ideal)", "dp_rank", r.by_dp_rank);
    table("worst stages", "stage", r.by_stage);
    table("worst op types", "op_type", r.by_op_type);
    std::vector<std::tuple<double, int32_t, int32_t>> ws;
    for (size_t d = 0; d < r.worker_score.size(); ++d)
      for (size_t p = 0; p < r.worker_score[d].size(); ++p)
        ws.emplace_back(r.worker_score[d][p], static_cast<int32_t>(d), static_cast<int32_t>(p));
    std::stable_sort(ws.begin(), ws.end(), [](const auto& x, const auto& y) { return std::get<0>(x) > std::get<0>(y); });
    out += fmt::format("\nworst workers ({})\n  {:>8} {:>6} {:>10}\n",
                       r.by_worker.empty() ? "min of its DP rank's and its stage's slowdown"
                                           : "that worker measured, the rest ideal",
                       "dp_rank", "stage", "score");
    for (size_t i = 0; i < std::min<size_t>(5, ws.size()); ++i)
      out += fmt::format("  {:>8} {:>6} {:>10.4f}\n", std::get<1>(ws[i]), std::get<2>(ws[i]), std::get<0>(ws[i]));
  }
  out += fmt::format("\n  {:>6} {:>12} {:>14} {:>12} {:>10} {:>9}\n", "step", "measured_ms", "resimulated_ms",
                     "nodelay_ms", "ideal_ms", "slowdown");
  for (const StepFigures& s : r.steps) {
    out += fmt::format("  {:>6} {:>12.3f} {:>14.3f} {:>12.3f} {:>10.3f} {:>9.4f}\n", s.step, s.measured_ms,
                       s.resimulated_ms, s.nodelay_ms, s.ideal_ms, s.slowdown);
  }
  if (r.predicted) {
    const auto& p = *r.predicted;
    out += fmt::format("\n--reduce-grad {}: predicted step {:.3f} ms with the measured costs (traced placement "
                       "{:.3f} ms), {:.3f} ms with the ideal costs (traced {:.3f} ms)\n",
                       p.policy, p.measured_costs_ms, p.traced_ms, p.ideal_costs_ms, p.traced_ideal_ms);
    if (!p.traced_policy.empty()) out += fmt::format("  the trace's own policy: {}\n", p.traced_policy);
    if (p.graph_ms)
      out += fmt::format("  the dependency graph's rewrite: {:.3f} ms measured, {:.3f} ms ideal\n", *p.graph_ms,
                         p.graph_ideal_ms.value_or(0.0));
  }
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  return out;
}

std::string to_svg(const WhatIfResult& r) {
  const auto dp = static_cast<int32_t>(r.worker_score.size());
  const int32_t pp = r.pp;
  if (dp == 0) {
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"420\" height=\"40\"><text x=\"10\" y=\"25\" "
           "font-family=\"sans-serif\" font-size=\"13\">no attribution: S below the threshold</text></svg>\n";
  }
  const int cell = std::clamp(560 / std::max(dp, pp), 6, 48);
  const int left = 70, top = 50, legend = 120;
  const int w = std::max(left + pp * cell + legend, 480), h = top + dp * cell + 40;
  double lo = 1.0, hi = 1.0;
  for (const auto& row : r.worker_score)
    for (double v : row) hi = std::max(hi, v);
  const auto color = [&](double v) {
    const double t = hi > lo ? std::clamp((v - lo) / (hi - lo), 0.0, 1.0) : 0.0;  // white → red
    const int g = static_cast<int>(std::lround(255 * (1 - t)));
    return fmt::format("rgb(255,{},{})", g, g);
  };
  std::string s = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                              "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
                              w, h);
  // The cells are worker_score: S_w on a ppstream trace, min(S_dp, S_stage) on Megatron timelines.
  const char* title = r.by_worker.empty() ? "min(DP rank, stage) slowdown per worker"
                                          : "slowdown each worker alone causes";
  s += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\">{} (S = {:.3f})</text>\n", left, title, r.slowdown);
  s += fmt::format("<text x=\"{}\" y=\"{}\">stage (PP rank) →</text>\n", left, top - 8);
  s += fmt::format("<text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {})\">DP rank →</text>\n", top + 60, top + 60);
  const bool labels = cell >= 14;
  for (int32_t d = 0; d < dp; ++d) {
    if (labels) s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 4, top + d * cell + cell / 2 + 4, d);
    for (int32_t p = 0; p < pp; ++p) {
      const double v = r.worker_score[static_cast<size_t>(d)][static_cast<size_t>(p)];
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#ccc\"><title>DP {} stage {}: "
                       "{:.4f}</title></rect>\n",
                       left + p * cell, top + d * cell, cell, cell, color(v), d, p, v);
      if (cell >= 40) s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\">{:.3f}</text>\n",
                                       left + p * cell + cell / 2, top + d * cell + cell / 2 + 4, v);
    }
  }
  if (labels)
    for (int32_t p = 0; p < pp; ++p)
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + p * cell + cell / 2, top + dp * cell + 14, p);
  const int lx = left + pp * cell + 20;
  for (int i = 0; i <= 10; ++i) {
    const double v = hi - (hi - lo) * i / 10.0;
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"12\" fill=\"{}\" stroke=\"#ccc\"/>\n", lx, top + i * 12, color(v));
    if (i % 5 == 0) s += fmt::format("<text x=\"{}\" y=\"{}\">{:.3f}</text>\n", lx + 22, top + i * 12 + 10, v);
  }
  s += "</svg>\n";
  return s;
}

std::string to_trace(const WhatIfResult& r) {
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"args", {{"name", "ideal step (every DP rank)"}}}});
  std::map<std::pair<int32_t, std::string>, int> tids;  // (stage, lane) → tid, stage-major
  for (const auto& s : r.ideal_timeline) tids.emplace(std::pair{s.stage, s.lane}, 0);
  int next = 0;
  for (auto& [key, tid] : tids) {
    tid = next++;
    ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", tid},
                  {"args", {{"name", fmt::format("PP rank {}, {}", key.first, key.second)}}}});
    ev.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 0}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
  }
  for (const auto& s : r.ideal_timeline) {
    ev.push_back({{"name", s.name}, {"ph", "X"}, {"pid", 0}, {"tid", tids.at({s.stage, s.lane})}, {"ts", s.start_ms * 1e3},
                  {"dur", (s.end_ms - s.start_ms) * 1e3}});
  }
  return nlohmann::json{{"traceEvents", ev}}.dump() + "\n";
}

}  // namespace ppstream::whatif
