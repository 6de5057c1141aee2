// to_yaml: a PipelineConfig written back in the loader's keys (for `--print-config` and tests).
#include "config_internal.h"

namespace ppstream {
namespace {
using namespace config_detail;

// One string per PP rank from stage_layers (the rank's stages in stage order: ir.h Placement).
std::vector<std::string> strings_from_stages(const PipelineConfig& cfg) {
  const auto pp = static_cast<size_t>(cfg.pipeline_parallel_size);
  const Placement pl = cfg.placement();
  std::vector<std::string> out(pp);
  for (size_t s = 0; s < cfg.stage_layers.size(); ++s) {
    const LayerRange& r = cfg.stage_layers[s];
    std::string& str = out[static_cast<size_t>(pp_rank_of_stage(Stage{static_cast<int32_t>(s)}, cfg.pipeline_parallel_size, pl))];
    // Appends, not `"-" + std::to_string(...)`: GCC 12 -O2 warns -Wrestrict on operator+(const
    // char*, string&&) (GCC bug 105329, a false positive).
    if (!str.empty()) str += ',';
    str += std::to_string(r.first);
    if (r.first != r.last) (str += '-') += std::to_string(r.last);
  }
  return out;
}
}  // namespace

std::string to_yaml(const PipelineConfig& cfg) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "pipeline_parallel_size" << YAML::Value << cfg.pipeline_parallel_size;
  out << YAML::Key << "pipeline_parallel_interleave_num" << YAML::Value << cfg.pipeline_parallel_interleave_num;
  std::vector<std::string> strings = cfg.layers_per_stage;
  if (strings.empty() && cfg.pipeline_parallel_size > 0 && cfg.num_stages() > 0 &&
      cfg.stage_layers != even_split(cfg.num_layers, cfg.num_stages()))
    strings = strings_from_stages(cfg);
  if (!strings.empty()) {
    out << YAML::Key << kLayersKey << YAML::Value << YAML::BeginSeq;
    for (const auto& s : strings) out << YAML::DoubleQuoted << s;
    out << YAML::EndSeq;
  }
  out << YAML::Key << "num_layers" << YAML::Value << cfg.num_layers;
  out << YAML::Key << "micro_batch_num" << YAML::Value << cfg.micro_batch_num;
  out << YAML::Key << "pipeline_parallel_overlap_p2p" << YAML::Value << cfg.pipeline_parallel_overlap_p2p;
  out << YAML::Key << "pipeline_parallel_overlap_b_f" << YAML::Value << cfg.pipeline_parallel_overlap_b_f;
  out << YAML::Key << "pipeline_parallel_p2p_transport" << YAML::Value << to_string(cfg.pipeline_parallel_p2p_transport);
  out << YAML::Key << "schedule" << YAML::Value << to_string(cfg.schedule);
  out << YAML::Key << "data_parallel" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "mode" << YAML::Value << to_string(cfg.mode);
  if (cfg.mode != DPMode::NONE) {
    out << YAML::Key << "shard_size" << YAML::Value << cfg.shard_size;
    out << YAML::Key << "replicate_size" << YAML::Value << cfg.replicate_size;
    out << YAML::Key << "reshard_after_backward" << YAML::Value << cfg.reshard_after_backward;
    if (cfg.max_active_stages > 0)
      out << YAML::Key << "max_active_stages" << YAML::Value << cfg.max_active_stages;
    out << YAML::Key << "reduce_grad" << YAML::Value << to_string(cfg.reduce_grad);
    out << YAML::Key << "sync_last_reduce" << YAML::Value << cfg.sync_last_reduce;
    if (cfg.reduce_order != ReduceOrder::PROGRAM)
      out << YAML::Key << "reduce_order" << YAML::Value << to_string(cfg.reduce_order);
    if (cfg.reduce_buckets != 1) out << YAML::Key << "reduce_buckets" << YAML::Value << cfg.reduce_buckets;
  }
  out << YAML::EndMap;
  for (const auto& [name, text] : cfg.extra_sections)
    out << YAML::Key << name << YAML::Value << YAML::Load(text);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace ppstream
