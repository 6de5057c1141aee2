#include "config_args.h"

#include <sstream>
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
    kv.emplace_back(item.substr(0, eq), item.substr(eq + 1));
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

std::vector<PlatformKind> parse_platform_list(const std::string& text) {
  if (text == "all") return {PlatformKind::STRICT, PlatformKind::ASCEND_MINDSPORE, PlatformKind::CPU_SERIAL};
  std::vector<PlatformKind> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto k = parse_platform(item);
    if (!k) throw std::invalid_argument("--platform " + item + ": expected strict, ascend-mindspore, cpu-serial or all");
    out.push_back(*k);
  }
  return out;
}

}  // namespace ppstream::cli
