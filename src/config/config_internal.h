// Internals shared by the config loader, the override path and validation: where each key was
// written (for FILE:LINE: in messages), the per-key readers and the default derivation.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "ppstream/config/config.h"

namespace ppstream::config_detail {

// Where each key (and each layer string, as "pipeline_parallel_layers_per_stage[r]") was
// written: "FILE:LINE". Empty for overrides and for configs built in code.
class Locator {
 public:
  Locator() = default;
  explicit Locator(std::string origin) : origin_(std::move(origin)) {}
  // "FILE:LINE" of a node, or "" when the node carries no position.
  std::string at(const YAML::Node& node) const;
  void remember(const std::string& key, const std::string& where) { where_[key] = where; }
  // Position of `key`, else of the first of `fallbacks` that is known, else the file ("" when
  // the config did not come from a file).
  std::string of(const std::string& key, const std::vector<std::string>& fallbacks = {}) const;
  bool from_yaml() const { return !origin_.empty(); }

 private:
  std::string origin_;
  std::map<std::string, std::string> where_;
};

// Throws ConfigError "config: WHERE: MESSAGE" (or "config: MESSAGE" when `where` is empty).
[[noreturn]] void fail(const std::string& where, const std::string& message);

// The value as the user wrote it, for messages: a scalar's text, else "a sequence"/"a mapping".
std::string shown(const YAML::Node& node);

// Sets one core key (top-level or dotted "data_parallel.x") from a YAML node written at `where`
// ("FILE:LINE" or ""); records it in cfg.given_keys and `loc`. Unknown keys fail with a
// did-you-mean. `from_cli`: the node came from an override string (enables the ';' form of the
// layer strings and "" for "no layer strings").
void apply_key(PipelineConfig& cfg, const std::string& key, const YAML::Node& value,
               const std::string& where, Locator& loc, bool from_cli);
// Fails for a duplicated key in a mapping (yaml-cpp keeps one silently).
void reject_duplicate_keys(const YAML::Node& map, const std::string& prefix, const Locator& loc);

// Re-derives defaults for keys not in cfg.given_keys and stage_layers from the layer strings or
// num_layers, then validates. Throws ConfigError.
void resolve_and_validate(PipelineConfig& cfg, const Locator& loc);
void validate_at(const PipelineConfig& cfg, const Locator& loc);
// pipeline_parallel_size and _interleave_num in range (what deriving stage_layers needs).
void check_sizes(const PipelineConfig& cfg, const Locator& loc);

// Layer-range helpers (layers.cpp).
std::vector<LayerRange> parse_layer_string_at(const std::string& text, const std::string& key,
                                              const std::string& where);
// stage_layers from one string per PP rank (rank r's i-th range is stage i*pp + r).
// Rank r's i-th range is stage_of_chunk(r, i) under `placement` (stage order on the rank).
std::vector<LayerRange> stage_layers_from_strings(const std::vector<std::string>& strings, int32_t pp,
                                                  int32_t vpp, Placement placement, const Locator& loc);
// Even split: the first num_layers % stages stages get one extra layer.
std::vector<LayerRange> even_split(int32_t num_layers, int32_t stages);
// Checks that stage_layers tile 0..num_layers-1 in stage order (each layer in exactly one stage).
void check_tiling(const PipelineConfig& cfg, const Locator& loc, int32_t num_layers);

// Closest candidate by edit distance, or "" when none is plausibly a typo.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);
// The known core keys (top-level and dotted data_parallel ones).
const std::vector<std::string>& core_keys();

// Largest layer count (keeps layer arithmetic far from int32 overflow).
inline constexpr int32_t kMaxLayers = 1 << 24;
inline constexpr const char* kLayersKey = "pipeline_parallel_layers_per_stage";
std::string layer_string_key(size_t rank);  // "pipeline_parallel_layers_per_stage[r]"

}  // namespace ppstream::config_detail
