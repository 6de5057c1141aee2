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
  // Where `key` ("cost.collective_alpha_ms") got its value: "--set KEY=VALUE" when an override
  // set it (the last one wins), else "CONFIG" (the file's path), else "the defaults".
  std::string origin_of(const std::string& key) const;
};

}  // namespace ppstream::cli
