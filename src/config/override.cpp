// apply_override: `key=value` from the CLI through the same key readers as the YAML, then
// re-derivation and validation. Keys under a registered section ("cost.p2p_gbps") edit that
// section's YAML text.
#include <algorithm>

#include "config/yaml_guard.h"
#include "config_internal.h"

namespace ppstream {
namespace {
using namespace config_detail;

std::vector<std::string> split_dots(const std::string& key) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    out.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

YAML::Node parse_value(const std::string& key, const std::string& value) {
  if (auto e = yaml_syntax_error(value))
    fail("", key + "=" + value + ": not a YAML value (column " + std::to_string(e->column) + ": " + e->message + ")");
  try {
    return YAML::Load(value);
  } catch (const YAML::Exception& e) {
    fail("", key + "=" + value + ": not a YAML value (" + e.msg + ")");
  }
}

// The key as printable text for a message: other bytes as \xNN, at most 80 characters.
std::string shown_key(const std::string& key) {
  std::string out = "'";
  for (unsigned char c : key.substr(0, 80)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + (key.size() > 80 ? "'…" : "'");
}

// A section key is dot-separated names; anything else (empty parts, control bytes, invalid
// UTF-8) would be written into the section's YAML text and fail only when that text is read back.
bool is_name(const std::string& part) {
  return !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// Sets section.a.b = value inside the section's YAML text, creating mappings on the way.
void set_section_value(PipelineConfig& cfg, const std::string& key, const std::string& value) {
  const auto path = split_dots(key);
  for (const std::string& part : path)
    if (!is_name(part))
      fail("", "--set key " + shown_key(key) + ": expected dot-separated names of letters, digits, '_' or '-'");
  const YAML::Node node = parse_value(key, value);
  std::erase_if(cfg.extra_where, [&](const auto& kv) {  // set here, not read from the file
    return kv.first == key || kv.first.starts_with(key + ".") || (path.size() > 2 && kv.first == path[0] + "." + path[1]);
  });
  if (path.size() == 1) {
    cfg.extra_sections[key] = YAML::Dump(node);
    return;
  }
  auto it = cfg.extra_sections.find(path[0]);
  YAML::Node root(YAML::NodeType::Map);
  if (it != cfg.extra_sections.end()) {
    try {
      root = YAML::Load(it->second);
    } catch (const YAML::Exception& e) {  // the section's own text was read with the guard; keep any surprise located
      fail("", "--set key " + shown_key(key) + ": the " + path[0] + " section cannot be edited (" + e.msg + ")");
    }
  }
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  YAML::Node cur = root;
  for (size_t i = 1; i + 1 < path.size(); ++i) {
    if (!cur.IsMap()) break;
    YAML::Node child = cur[path[i]];
    if (!child.IsDefined() || child.IsNull()) cur[path[i]] = YAML::Node(YAML::NodeType::Map);
    cur.reset(cur[path[i]]);
  }
  if (!cur.IsMap())
    fail("", key + "=" + value + ": cannot set it, the section holds a non-mapping value on the way");
  cur[path.back()] = node;
  cfg.extra_sections[path[0]] = YAML::Dump(root);
}

bool is_section_key(const std::string& key) {
  const auto& names = extra_section_names();
  const std::string head = key.substr(0, key.find('.'));
  return std::find(names.begin(), names.end(), head) != names.end();
}
}  // namespace

void apply_overrides(PipelineConfig& cfg, const std::vector<std::pair<std::string, std::string>>& kv) {
  PipelineConfig next = cfg;  // `cfg` stays unchanged when an override is rejected
  Locator loc;                // overrides have no file position
  for (const auto& [key, value] : kv) {
    if (is_section_key(key)) {
      set_section_value(next, key, value);
      continue;
    }
    apply_key(next, key, parse_value(key, value), "", loc, /*from_cli=*/true);
  }
  resolve_and_validate(next, loc);
  cfg = std::move(next);
}

void apply_override(PipelineConfig& cfg, const std::string& key, const std::string& value) {
  apply_overrides(cfg, {{key, value}});
}

}  // namespace ppstream
