#include "config_args.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace ppstream::cli {

void ConfigArgs::add_to(CLI::App* cmd, bool config_required) {
  auto* opt = cmd->add_option("config", path, "YAML configuration (keys: docs/config.md)");
  if (config_required) opt->required();
  cmd->add_option("--set", sets, "override a config key, e.g. --set micro_batch_num=8 (repeatable)");
  cmd->add_option("--reduce-grad", reduce_grad, "reduction placement: inline | async");
}

PipelineConfig ConfigArgs::load() const {
  std::vector<std::pair<std::string, std::string>> kv;
  for (const std::string& item : sets) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw ConfigError("config: --set " + item + ": expected key=value, e.g. --set micro_batch_num=8");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    // Without CONFIG the pairs become YAML lines: a key with ':' or a value with a line break
    // would inject other keys. Keys are dotted names; values are one line.
    const bool key_ok = !key.empty() && std::all_of(key.begin(), key.end(), [](unsigned char c) {
      return std::isalnum(c) || c == '_' || c == '.';
    });
    if (!key_ok)
      throw ConfigError("config: --set " + item + ": key '" + key +
                        "' is not a config key; expected letters, digits, '_' and '.', e.g. data_parallel.mode=hsdp");
    if (value.find_first_of("\r\n") != std::string::npos)
      throw ConfigError("config: --set " + key + ": the value holds a line break; expected a one-line value");
    kv.emplace_back(key, value);
  }
  if (!reduce_grad.empty()) kv.emplace_back("data_parallel.reduce_grad", reduce_grad);
  if (path.empty()) {
    // No file: the whole configuration comes from --set, validated once at the end.
    if (kv.empty()) throw ConfigError("config: give a CONFIG file or the keys with --set key=value");
    std::string yaml;
    for (const auto& [k, v] : kv)
      if (k.find('.') == std::string::npos) yaml += k + ": " + v + "\n";
    PipelineConfig cfg = load_config_text(yaml.empty() ? "{}" : yaml, "--set");
    std::erase_if(kv, [](const auto& e) { return e.first.find('.') == std::string::npos; });
    if (!kv.empty()) apply_overrides(cfg, kv);
    return cfg;
  }
  PipelineConfig cfg = load_config_file(path);
  if (!kv.empty()) apply_overrides(cfg, kv);
  return cfg;
}

std::string ConfigArgs::origin_of(const std::string& key) const {
  for (auto it = sets.rbegin(); it != sets.rend(); ++it) {
    if (it->starts_with(key + "=")) return "--set " + *it;
  }
  return path.empty() ? "the defaults" : path;
}

}  // namespace ppstream::cli
