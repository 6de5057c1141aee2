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
  PipelineConfig cfg = path.empty() ? load_config_text("{}", "<defaults>") : load_config_file(path);
  for (const std::string& kv : sets) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos)
      throw ConfigError("config: --set " + kv + ": expected key=value, e.g. --set micro_batch_num=8");
    apply_override(cfg, kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (!reduce_grad.empty()) apply_override(cfg, "data_parallel.reduce_grad", reduce_grad);
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
