// How config errors are worded and located: "config: FILE:LINE: key=value: rule; fix", and the
// did-you-mean for unknown keys.
#include <algorithm>

#include "config_internal.h"

namespace ppstream::config_detail {

std::string Locator::at(const YAML::Node& node) const {
  if (origin_.empty() || !node.IsDefined()) return "";
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return origin_;
  return origin_ + ":" + std::to_string(mark.line + 1);
}

std::string Locator::of(const std::string& key, const std::vector<std::string>& fallbacks) const {
  if (auto it = where_.find(key); it != where_.end()) return it->second;
  for (const auto& k : fallbacks)
    if (auto it = where_.find(k); it != where_.end()) return it->second;
  return origin_;  // a rule about keys never written (e.g. no layers given) still names the file
}

void fail(const std::string& where, const std::string& message) {
  throw ConfigError("config: " + (where.empty() ? "" : where + ": ") + message);
}

std::string shown(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return node.Scalar();
    case YAML::NodeType::Sequence: return "a sequence";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Null: return "nothing (empty value)";
    case YAML::NodeType::Undefined: break;
  }
  return "nothing";
}

std::string layer_string_key(size_t rank) {
  return std::string(kLayersKey) + "[" + std::to_string(rank) + "]";
}

namespace {
// Levenshtein distance (insert, delete, substitute all cost 1), two rows.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = 0;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (best.empty() || d < best_d) best = c, best_d = d;
  }
  // A typo changes a few characters; beyond a third of the word it is another word.
  const size_t limit = std::max<size_t>(2, std::max(word.size(), best.size()) / 3);
  return best_d <= limit ? best : "";
}

}  // namespace ppstream::config_detail
