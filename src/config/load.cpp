// Loading: YAML text → PipelineConfig (core keys via apply_key, registered sections kept as
// YAML text), then the derivation of defaults and validation shared with apply_override.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/yaml_guard.h"
#include "config_internal.h"

namespace ppstream::config_detail {

void resolve_and_validate(PipelineConfig& cfg, const Locator& loc) {
  check_sizes(cfg, loc);
  const auto given = [&](const char* key) { return cfg.given_keys.count(key) > 0; };
  // Keys never given keep their value unless it conflicts with the given ones; then they take
  // the derived default (so a config built in code keeps its choices).
  if (!given("schedule")) {
    const bool interleaved = cfg.pipeline_parallel_interleave_num > 1;
    if (interleaved && !is_interleaved(cfg.schedule)) cfg.schedule = ScheduleKind::INTERLEAVED_1F1B;
    else if (!interleaved && is_interleaved(cfg.schedule)) cfg.schedule = ScheduleKind::ONE_F_ONE_B;
  }
  if (!given("data_parallel.reduce_grad")) {
    if (cfg.mode == DPMode::NONE) cfg.reduce_grad = ReducePolicy::NONE;
    else if (cfg.reduce_grad == ReducePolicy::NONE) cfg.reduce_grad = ReducePolicy::INLINE;
  }
  if (!cfg.layers_per_stage.empty()) {
    cfg.stage_layers = stage_layers_from_strings(cfg.layers_per_stage, cfg.pipeline_parallel_size,
                                                 cfg.pipeline_parallel_interleave_num, cfg.placement(), loc);
    if (!given("num_layers")) {
      int32_t covered = 0;
      for (const auto& r : cfg.stage_layers) covered = std::max(covered, r.last + 1);
      cfg.num_layers = covered;
    }
  } else if (given("num_layers") || given(kLayersKey) || cfg.stage_layers.empty()) {
    // The even split (too few layers: left empty, validate says why).
    cfg.stage_layers.clear();
    if (cfg.num_layers >= cfg.num_stages()) cfg.stage_layers = even_split(cfg.num_layers, cfg.num_stages());
  }
  validate_at(cfg, loc);
}

}  // namespace ppstream::config_detail

namespace ppstream {
using namespace config_detail;

PipelineConfig load_config_text(const std::string& yaml_text, const std::string& origin) {
  Locator loc(origin);
  if (auto e = yaml_syntax_error(yaml_text))
    fail(origin + ":" + std::to_string(e->line) + ":" + std::to_string(e->column), "invalid YAML: " + e->message);
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(yaml_text);
  } catch (const YAML::Exception& e) {
    const std::string where = e.mark.is_null() ? origin : origin + ":" + std::to_string(e.mark.line + 1);
    fail(where, "invalid YAML: " + e.msg);
  }
  if (docs.size() > 1) fail(origin, "holds " + std::to_string(docs.size()) + " YAML documents; expected one");
  if (docs.empty() || docs[0].IsNull())
    fail(origin, "empty config; expected a mapping with keys such as pipeline_parallel_size");
  const YAML::Node& root = docs[0];
  if (!root.IsMap()) fail(loc.at(root), "expected a mapping of keys at the top level, got " + shown(root));
  reject_duplicate_keys(root, "", loc);

  PipelineConfig cfg;
  const auto& sections = extra_section_names();
  for (const auto& kv : root) {
    const std::string where = loc.at(kv.first);
    if (!kv.first.IsScalar()) fail(where, "expected a key name, got " + shown(kv.first));
    const std::string& key = kv.first.Scalar();
    if (std::find(sections.begin(), sections.end(), key) != sections.end()) {
      cfg.extra_sections[key] = YAML::Dump(kv.second);
      cfg.extra_where[key] = where;
      if (kv.second.IsMap())
        for (const auto& sub : kv.second)
          if (sub.first.IsScalar()) cfg.extra_where[key + "." + sub.first.Scalar()] = loc.at(sub.first);
      continue;
    }
    apply_key(cfg, key, kv.second, where, loc, /*from_cli=*/false);
  }
  resolve_and_validate(cfg, loc);
  return cfg;
}

PipelineConfig load_config_file(const std::string& path) {
  std::error_code ec;  // a directory opens as an empty stream: say what it is, not "empty config"
  if (std::filesystem::is_directory(path, ec)) fail("", "cannot read " + path + ": it is a directory; expected a YAML file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("", "cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail("", "cannot read " + path + ": " + std::strerror(errno));
  return load_config_text(text.str(), path);
}

}  // namespace ppstream
