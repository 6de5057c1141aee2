// Shared CLI plumbing: CONFIG plus `--set key=value` overrides → a validated PipelineConfig.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/engine/engine.h"

namespace ppstream::cli {

struct ConfigArgs {
  std::string path;                 // optional YAML file
  std::vector<std::string> sets;    // key=value overrides, applied in order
  std::string reduce_grad;          // shorthand for --set data_parallel.reduce_grad=...
  void add_to(CLI::App* cmd, bool config_required);
  PipelineConfig load() const;      // throws ConfigError
};

}  // namespace ppstream::cli
