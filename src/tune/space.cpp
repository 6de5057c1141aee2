// The plan space: its default axes for a config and `--space KEY=V1,V2` axes.
#include <fmt/format.h>

#include <stdexcept>

#include "ppstream/tune/tune.h"

namespace ppstream::tune {
namespace {

std::vector<std::string> split_commas(const std::string& s) {
  // A plain loop: clang 14's <ranges> rejects views::split over a std::string with libstdc++ 12.
  std::vector<std::string> out;
  size_t from = 0;
  for (size_t comma; (comma = s.find(',', from)) != std::string::npos; from = comma + 1)
    out.push_back(s.substr(from, comma - from));
  out.push_back(s.substr(from));
  return out;
}

}  // namespace

const char* to_string(Objective o) {
  switch (o) {
    case Objective::P99: return "p99";
    case Objective::P50: return "p50";
    case Objective::MEAN: return "mean";
  }
  return "?";
}

std::optional<Objective> parse_objective(const std::string& s) {
  if (s == "p99") return Objective::P99;
  if (s == "p50") return Objective::P50;
  if (s == "mean") return Objective::MEAN;
  return std::nullopt;
}

std::vector<Dimension> default_space(const PipelineConfig& cfg) {
  std::vector<Dimension> d;
  const int32_t v = cfg.pipeline_parallel_interleave_num;
  if (v == 1) d.push_back({"schedule", {"gpipe", "1f1b", "zb_h1"}});
  else if (v == 2) d.push_back({"schedule", {"interleaved_1f1b", "interleaved_zb", "zbv", "dualpipev"}});
  else d.push_back({"schedule", {"interleaved_1f1b", "interleaved_zb"}});
  d.push_back({"pipeline_parallel_overlap_p2p", {"false", "true"}});
  d.push_back({"pipeline_parallel_overlap_b_f", {"false", "true"}});
  d.push_back({"pipeline_parallel_p2p_transport", {"batch", "multi_stream"}});
  if (cfg.mode != DPMode::NONE) {
    d.push_back({"data_parallel.reduce_grad", {"inline", "async"}});
    d.push_back({"data_parallel.sync_last_reduce", {"true", "false"}});
    d.push_back({"data_parallel.reduce_order", {"program", "priority"}});
    if (cfg.shard_size > 1 && v > 1) {
      Dimension depth{"data_parallel.max_active_stages", {}};
      for (int32_t k = 1; k <= v; ++k) depth.values.push_back(std::to_string(k));
      d.push_back(std::move(depth));
    }
  }
  return d;
}

Dimension parse_dimension(const std::string& text, const PipelineConfig& cfg) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument(fmt::format("tune --space {}: expected KEY=V1,V2,… (e.g. data_parallel.reduce_grad=inline,async)", text));
  Dimension d{text.substr(0, eq), split_commas(text.substr(eq + 1))};
  for (const std::string& v : d.values)
    if (v.empty()) throw std::invalid_argument(fmt::format("tune --space {}: an empty value in the list", text));
  // The key must be one the loader knows: apply its first value to a copy. A value the
  // config rejects in combination is a plan set aside later, not an error here; an unknown
  // key is an error here.
  PipelineConfig probe = cfg;
  try {
    apply_override(probe, d.key, d.values.front());
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    if (what.find("unknown") != std::string::npos)
      throw std::invalid_argument(fmt::format("tune --space {}: {}", text, what));
  }
  return d;
}

}  // namespace ppstream::tune
