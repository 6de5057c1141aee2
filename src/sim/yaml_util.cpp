#include "yaml_util.h"

#include <fmt/format.h>

#include "config/yaml_guard.h"

#include <algorithm>
#include <cmath>

namespace ppstream::sim::yaml {
namespace {

std::string show(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "<missing>";
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << node;
  return e.c_str();
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

void fail(const std::string& section, const std::string& key, const YAML::Node& node, const std::string& expected) {
  // No line number: the loader keeps the section re-dumped, so its lines are not the file's.
  throw ConfigError(fmt::format("config: {}.{}={}: expected {}", section, key, show(node), expected));
}

YAML::Node load_section(const std::string& section, const std::string& text) {
  if (auto e = config_detail::yaml_syntax_error(text))
    throw ConfigError(fmt::format("config: {}: line {}: {}", section, e->line, e->message));
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("config: {}: line {}: {}", section, e.mark.line + 1, e.msg));
  }
  if (!root.IsDefined() || root.IsNull()) return YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) fail(section, "", root, "a mapping of keys");
  return root;
}

void check_keys(const std::string& section, const YAML::Node& map, const std::vector<std::string>& allowed) {
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) fail(section, "", kv.first, "a key name");
    const std::string key = kv.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string best;
    size_t best_d = 4;
    for (const std::string& a : allowed)
      if (const size_t d = edit_distance(key, a); d < best_d) best_d = d, best = a;
    std::string known;
    for (const std::string& a : allowed) known += (known.empty() ? "" : ", ") + a;
    throw ConfigError(fmt::format("config: {}.{}: unknown key{}; known keys: {}", section, key,
                                  best.empty() ? "" : "; did you mean " + best + "?", known));
  }
}

double number(const std::string& section, const std::string& key, const YAML::Node& node, double min_value) {
  double v = 0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, v) || !std::isfinite(v) || v < min_value)
    fail(section, key, node, fmt::format("a number >= {}", min_value));
  return v;
}

int64_t integer(const std::string& section, const std::string& key, const YAML::Node& node, int64_t min_value,
                const char* expected) {
  int64_t v = 0;
  if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, v) || v < min_value)
    fail(section, key, node, expected != nullptr ? std::string(expected) : fmt::format("an integer >= {}", min_value));
  return v;
}

std::string text(const std::string& section, const std::string& key, const YAML::Node& node) {
  if (!node.IsScalar()) fail(section, key, node, "a string");
  return node.Scalar();
}

bool boolean(const std::string& section, const std::string& key, const YAML::Node& node) {
  bool v = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, v)) fail(section, key, node, "true or false");
  return v;
}

}  // namespace ppstream::sim::yaml
