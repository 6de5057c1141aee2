// The plan space: its default axes for a config, the keys and values `--space KEY=V1,V2` may
// give (plan_space_keys), and the checks of a space.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
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

const std::vector<SpaceKey>& plan_space_keys() {
  static const std::vector<SpaceKey> keys = {
      {"schedule", {"gpipe", "1f1b", "interleaved_1f1b", "zb_h1", "interleaved_zb", "zbv", "dualpipev"}, 0},
      {"pipeline_parallel_overlap_p2p", {"false", "true"}, 0},
      {"pipeline_parallel_overlap_b_f", {"false", "true"}, 0},
      {"pipeline_parallel_p2p_transport", {"plain", "batch", "multi_stream"}, 0},
      {"data_parallel.reduce_grad", {"inline", "async"}, 0},
      {"data_parallel.sync_last_reduce", {"false", "true"}, 0},
      {"data_parallel.reduce_order", {"program", "priority"}, 0},
      {"data_parallel.reshard_after_backward", {"false", "true"}, 0},
      {"data_parallel.max_active_stages", {}, 1},
      {"data_parallel.reduce_buckets", {}, 1},
  };
  return keys;
}

void check_dimension(const Dimension& d, const PipelineConfig& cfg) {
  const std::string text = fmt::format("{}={}", d.key, fmt::join(d.values, ","));
  const auto& keys = plan_space_keys();
  const auto key = std::find_if(keys.begin(), keys.end(), [&](const SpaceKey& k) { return k.key == d.key; });
  if (key == keys.end()) {
    std::vector<std::string> names;
    for (const SpaceKey& k : keys) names.push_back(k.key);
    // A key the loader does not know at all gets its did-you-mean from the loader.
    std::string loader;
    PipelineConfig probe = cfg;
    try {
      apply_override(probe, d.key, d.values.empty() ? std::string("0") : d.values.front());
    } catch (const ConfigError& e) {
      if (std::string(e.what()).find("unknown") != std::string::npos) loader = fmt::format(" ({})", e.what());
    }
    throw std::invalid_argument(fmt::format(
        "tune --space {}: '{}' is not a key of the plan space{}; a plan varies only how the same job runs, so the model, "
        "the batch (micro_batch_num), the world sizes, the layer split, the cost: and straggler: sections and the train: "
        "section are not searched. Plan-space keys: {}",
        text, d.key, loader, fmt::join(names, ", ")));
  }
  if (d.values.empty()) throw std::invalid_argument(fmt::format("tune --space {}: no values", text));
  for (size_t n = 0; n < d.values.size(); ++n) {
    const std::string& v = d.values[n];
    if (v.empty()) throw std::invalid_argument(fmt::format("tune --space {}: an empty value in the list", text));
    if (std::find(d.values.begin(), d.values.begin() + static_cast<std::ptrdiff_t>(n), v) != d.values.begin() + static_cast<std::ptrdiff_t>(n))
      throw std::invalid_argument(fmt::format("tune --space {}: value '{}' given twice", text, v));
    if (!key->values.empty()) {
      if (std::find(key->values.begin(), key->values.end(), v) == key->values.end())
        throw std::invalid_argument(fmt::format("tune --space {}: value '{}' of {}: expected one of {}", text, v, d.key,
                                                fmt::join(key->values, ", ")));
      continue;
    }
    // An integer key: decimal digits, at least min_int (the config rules bound it further:
    // a value they reject with this config is a plan logged `invalid`).
    const bool digits = v.size() <= 9 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoi(v) < key->min_int)
      throw std::invalid_argument(fmt::format("tune --space {}: value '{}' of {}: expected an integer >= {}", text, v,
                                              d.key, key->min_int));
    if (d.key == "data_parallel.max_active_stages" && std::stoi(v) > cfg.pipeline_parallel_interleave_num)
      throw std::invalid_argument(fmt::format("tune --space {}: value '{}' of {}: expected 1..{} (the config's "
                                              "pipeline_parallel_interleave_num)",
                                              text, v, d.key, cfg.pipeline_parallel_interleave_num));
  }
}

void check_space(const std::vector<Dimension>& space, const PipelineConfig& cfg) {
  for (size_t n = 0; n < space.size(); ++n) {
    for (size_t k = 0; k < n; ++k)
      if (space[k].key == space[n].key)
        throw std::invalid_argument(fmt::format("tune --space: key '{}' given twice ({} and {}); give its values once, "
                                                "as {}=V1,V2,…",
                                                space[n].key, fmt::format("{}={}", space[k].key, fmt::join(space[k].values, ",")),
                                                fmt::format("{}={}", space[n].key, fmt::join(space[n].values, ",")), space[n].key));
    check_dimension(space[n], cfg);
  }
}

Dimension parse_dimension(const std::string& text, const PipelineConfig& cfg) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument(fmt::format("tune --space {}: expected KEY=V1,V2,… (e.g. data_parallel.reduce_grad=inline,async)", text));
  Dimension d{text.substr(0, eq), split_commas(text.substr(eq + 1))};
  check_dimension(d, cfg);
  return d;
}

}  // namespace ppstream::tune
