// Baseline vs optimized: every metric for the whole set, per rank and per stage, with the change.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <utility>

#include "ppstream/analyze/analyze.h"

namespace ppstream::analyze {
namespace {

using Flat = std::vector<std::pair<std::string, std::optional<double>>>;

Flat flatten(const RankMetrics& m) {
  Flat f = {{"step_time_ms", m.step_time_ms},         {"compute_ms", m.compute_ms},
            {"compute_wait_ms", m.compute_wait_ms},   {"stream_wait_ms", m.stream_wait_ms},
            {"pp_wait_ms", m.pp_wait_ms},             {"bubble_ms", m.bubble_ms},
            {"bubble_ratio", m.bubble_ratio},         {"reduce_exposed_ms", m.reduce_exposed_ms},
            {"reduce_unoverlapped_ms", m.reduce_unoverlapped_ms},
            {"reduce_overlap_ratio", m.reduce_overlap_ratio}};
  for (const auto& o : m.overlap) {
    std::string k = o.group.empty() ? o.kind : fmt::format("{}[{}]", o.kind, o.group);
    f.emplace_back(fmt::format("overlap_ratio.{}", k), o.ratio);
    f.emplace_back(fmt::format("exposed_ms.{}", k), o.exposed_ms);
  }
  for (const auto& s : m.streams) f.emplace_back(fmt::format("wait_ms.{}", s.stream), s.wait_ms);
  return f;
}

// A stage's value of a metric: the mean over its ranks (ranks without the metric skipped).
std::map<int32_t, std::map<std::string, std::optional<double>>> by_stage(const StepMetrics& s) {
  std::map<int32_t, std::map<std::string, std::pair<double, int>>> acc;
  for (const auto& r : s.ranks) {
    if (!r.pp_rank) continue;
    for (const auto& [k, v] : flatten(r)) {
      auto& a = acc[*r.pp_rank][k];
      if (v) {
        a.first += *v;
        ++a.second;
      }
    }
  }
  std::map<int32_t, std::map<std::string, std::optional<double>>> out;
  for (const auto& [stage, metrics] : acc) {
    for (const auto& [k, a] : metrics) {
      out[stage][k] = a.second ? std::optional<double>(a.first / a.second) : std::nullopt;
    }
  }
  return out;
}

void add_rows(DiffResult& d, const std::string& scope, const Flat& base, const Flat& opt) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : base) keys.push_back(k);
  for (const auto& [k, v] : opt) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  auto get = [](const Flat& f, const std::string& k) -> std::optional<double> {
    for (const auto& [key, v] : f) {
      if (key == k) return v;
    }
    return std::nullopt;
  };
  for (const auto& k : keys) {
    DiffRow r{scope, k, get(base, k), get(opt, k), std::nullopt, std::nullopt};
    if (r.baseline && r.optimized) {
      r.change = *r.optimized - *r.baseline;
      if (*r.baseline != 0) r.change_pct = 100.0 * *r.change / std::fabs(*r.baseline);
    }
    d.rows.push_back(std::move(r));
  }
}

}  // namespace

DiffResult diff(const AnalysisResult& baseline, const AnalysisResult& optimized) {
  DiffResult d;
  d.baseline_sources = baseline.sources;
  d.optimized_sources = optimized.sources;
  auto set_level = [](const StepMetrics& s) {
    return Flat{{"step_time_ms", s.step_time_ms},
                {"bubble_ratio", s.bubble_ratio},
                {"reduce_exposed_ms", s.reduce_exposed_ms},
                {"reduce_overlap_ratio", s.reduce_overlap_ratio}};
  };
  add_rows(d, "all", set_level(baseline.total), set_level(optimized.total));
  auto bs = by_stage(baseline.total), os = by_stage(optimized.total);
  for (const auto& [stage, m] : bs) {
    Flat b(m.begin(), m.end()), o;
    if (os.count(stage)) o.assign(os[stage].begin(), os[stage].end());
    add_rows(d, fmt::format("stage {}", stage), b, o);
  }
  std::map<int32_t, const RankMetrics*> br, orr;
  for (const auto& r : baseline.total.ranks) br[r.rank.v] = &r;
  for (const auto& r : optimized.total.ranks) orr[r.rank.v] = &r;
  for (const auto& [rank, m] : br) {
    add_rows(d, fmt::format("rank {}", rank), flatten(*m), orr.count(rank) ? flatten(*orr[rank]) : Flat{});
  }
  for (const auto& [rank, m] : orr) {
    if (!br.count(rank)) add_rows(d, fmt::format("rank {}", rank), Flat{}, flatten(*m));
  }
  return d;
}

DiffResult diff_paths(const std::vector<std::string>& baseline, const std::vector<std::string>& optimized,
                      const AnalyzeOptions& opts) {
  // Named by side: analyze_paths' own "analyze: no input path given" does not say which.
  for (const auto& [side, paths] : {std::pair{"baseline", &baseline}, std::pair{"optimized", &optimized}})
    if (paths->empty()) throw TraceError(fmt::format("diff: {}: no path given; expected its traces", side));
  return diff(analyze_paths(baseline, opts), analyze_paths(optimized, opts));
}

}  // namespace ppstream::analyze
