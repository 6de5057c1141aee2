// PipelineConfig: the pipeline × data-parallel configuration, read from YAML with the user's
// own keys (MindSpore / Megatron names) or built from CLI flags, and validated once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppstream/program/ir.h"

namespace ppstream {

enum class ScheduleKind : uint8_t { GPIPE, ONE_F_ONE_B, INTERLEAVED_1F1B, ZB_H1, INTERLEAVED_ZB, ZBV, DUALPIPEV };
// Does the schedule split the backward into I (dX) and W (dW)? (zero-bubble family)
inline bool splits_backward(ScheduleKind k) {
  return k == ScheduleKind::ZB_H1 || k == ScheduleKind::INTERLEAVED_ZB || k == ScheduleKind::ZBV ||
         k == ScheduleKind::DUALPIPEV;
}
// Does it run several virtual stages per rank? (Interleaved: stage c*pp + r; V: r and 2pp-1-r.)
inline bool is_interleaved(ScheduleKind k) {
  return k == ScheduleKind::INTERLEAVED_1F1B || k == ScheduleKind::INTERLEAVED_ZB || k == ScheduleKind::ZBV ||
         k == ScheduleKind::DUALPIPEV;
}
// The V schedules place rank r's two stages at r and 2pp-1-r (ir.h Placement::V).
inline bool is_v_schedule(ScheduleKind k) { return k == ScheduleKind::ZBV || k == ScheduleKind::DUALPIPEV; }
inline Placement placement_of(ScheduleKind k) { return is_v_schedule(k) ? Placement::V : Placement::LOOP; }
// Rounds of the interleaved schedules (PyTorch ScheduleInterleaved1F1B's rule): max(1, m / pp);
// the microbatch count must be a multiple of it. Lives here because validation checks it.
inline int32_t interleaved_rounds(int32_t pp, int32_t microbatches) {
  return microbatches / pp > 1 ? microbatches / pp : 1;
}
enum class P2PTransport : uint8_t { PLAIN, BATCH, MULTI_STREAM };
// The order a rank's async reductions queue on the reduction stream (pass order-reductions):
// PROGRAM = each right after its stage's send batch, in backward order; PRIORITY = all queued at
// the last of those sends, the stage with the most layers (the largest reduction, whose tail
// costs most) first, ties in stage order.
enum class ReduceOrder : uint8_t { PROGRAM, PRIORITY };

// Inclusive layer range [first, last] of one virtual stage.
struct LayerRange {
  int32_t first = 0;
  int32_t last = 0;
  int32_t count() const { return last - first + 1; }
  auto operator<=>(const LayerRange&) const = default;
};

struct PipelineConfig {
  int32_t pipeline_parallel_size = 1;            // PP ranks (p)
  int32_t pipeline_parallel_interleave_num = 1;  // virtual stages per PP rank (v)
  int32_t micro_batch_num = 1;                   // microbatches per step (m)
  int32_t num_layers = 0;                        // total layers; derived from layer ranges if given
  // Layers of global virtual stage s (size p*v), from pipeline_parallel_layers_per_stage
  // (one string per PP rank listing its stages in stage order, "a-b,c-d" = chunk 0, chunk 1:
  // stages r, pp+r, … or, for V schedules, r and 2pp-1-r) or an even split of num_layers.
  std::vector<LayerRange> stage_layers;
  // pipeline_parallel_layers_per_stage as given (one string per PP rank); empty: even split of
  // num_layers (the first num_layers % (p*v) stages get one extra layer).
  std::vector<std::string> layers_per_stage;
  bool pipeline_parallel_overlap_p2p = false;    // defer the recv wait to the consuming compute
  bool pipeline_parallel_overlap_b_f = false;    // pair a backward with the next forward (one batch)
  P2PTransport pipeline_parallel_p2p_transport = P2PTransport::BATCH;
  ScheduleKind schedule = ScheduleKind::ONE_F_ONE_B;
  DPMode mode = DPMode::NONE;
  int32_t shard_size = 1;
  int32_t replicate_size = 1;
  bool reshard_after_backward = true;
  int32_t max_active_stages = 0;                 // UNSHARD prefetch depth; 0 = unset (means v)
  // Must be NONE iff mode == NONE (validate checks it; the loader derives it). INLINE is
  // the fsdp/hsdp default; code that builds a mode-NONE config sets NONE itself.
  ReducePolicy reduce_grad = ReducePolicy::INLINE;
  bool sync_last_reduce = true;                  // async: keep the last local stage's reduction on compute
  ReduceOrder reduce_order = ReduceOrder::PROGRAM;  // async: queue order on the reduction stream
  // Gradient buckets per stage (k): the last backward of each stage is split into k pieces over
  // its layers in backward order, each followed by the reduction of its bucket (program/ir.h
  // Bucket; docs/semantics.md "Gradient buckets"). 1: one reduction per stage (as before).
  // Must be in [1, the fewest layers of any stage].
  int32_t reduce_buckets = 1;

  // Any further top-level sections (e.g. `cost:` for the simulator, `model:` for the runtime)
  // are kept verbatim as YAML text for their own readers; see `extra_sections`.
  std::map<std::string, std::string> extra_sections;
  // Where each key of those sections was read, "FILE:LINE" by dotted key ("cost",
  // "cost.forward_ms_per_layer"): what the sections' readers' errors are located with
  // (sim::trial_setup). Empty for keys set by --set or in code.
  std::map<std::string, std::string> extra_where;

  // Keys set by the YAML or by overrides, dotted for data_parallel ("data_parallel.mode").
  // Keys not in it take derived defaults when the loader or apply_override re-derives:
  // schedule from the interleave number, reduce_grad from the mode, num_layers from the layer
  // strings. A config built in code has it empty; validate() then checks the fields as they are.
  std::set<std::string> given_keys;

  int32_t num_stages() const { return pipeline_parallel_size * pipeline_parallel_interleave_num; }
  // UNSHARD prefetch depth in effect: max_active_stages, or v when unset (0).
  int32_t active_stage_limit() const {
    return max_active_stages > 0 ? max_active_stages : pipeline_parallel_interleave_num;
  }
  // Where the stages live: placement_of(schedule); LOOP while a V schedule has vpp != 2 (which
  // validate rejects), so layer messages still make sense before that error.
  Placement placement() const {
    return pipeline_parallel_interleave_num == 2 ? placement_of(schedule) : Placement::LOOP;
  }
  World world(bool expanded) const;
};

// A rejected configuration. what() reads like
// `config: micro_batch_num=3 must be a multiple of pipeline_parallel_size=4 for interleaved_1f1b; use 4, 8, … or schedule 1f1b`
// and names the file (and line, for YAML) when known.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Top-level keys the loader accepts besides the core keys above (other issues register
// their sections here so that unknown keys are still rejected with a did-you-mean).
const std::vector<std::string>& extra_section_names();

// Parses and validates. Throws ConfigError naming file, line, key, value and the rule.
PipelineConfig load_config_file(const std::string& path);
PipelineConfig load_config_text(const std::string& yaml_text, const std::string& origin = "<text>");
// Applies `key=value` overrides (same keys and rules as YAML, e.g. from the CLI), re-derives
// defaults for keys never given, revalidates. `value` is read as a YAML scalar or flow value;
// pipeline_parallel_layers_per_stage also takes "0-5,24-29;6-11,30-35" (';' between PP ranks)
// and "" (use the even split of num_layers). Data-parallel keys are dotted: data_parallel.mode.
// Throws ConfigError; on error `cfg` is left unchanged.
void apply_override(PipelineConfig& cfg, const std::string& key, const std::string& value);
// Applies several overrides in order and validates once at the end, so that keys that only
// make sense together (pipeline_parallel_size and the layer strings) can change together.
void apply_overrides(PipelineConfig& cfg, const std::vector<std::pair<std::string, std::string>>& kv);
// Full validation (layer ranges, microbatches vs schedule, DP sizes, …); throws ConfigError.
void validate(const PipelineConfig& cfg);
// Parses one PP rank's layer string "0-5,24-29" into one range per chunk; throws ConfigError.
std::vector<LayerRange> parse_layer_string(const std::string& text, const std::string& key);

// Value spellings: gpipe | 1f1b | interleaved_1f1b | zb_h1 | interleaved_zb | zbv | dualpipev
// and plain | batch | multi_stream.
const char* to_string(ScheduleKind k);
const char* to_string(P2PTransport t);
const char* to_string(ReduceOrder o);  // "program" | "priority"
std::optional<ScheduleKind> parse_schedule_kind(const std::string& s);
std::optional<P2PTransport> parse_p2p_transport(const std::string& s);
// The config as YAML in the loader's own keys (only the core keys and extra sections);
// load_config_text(to_yaml(cfg)) gives back the same fields.
std::string to_yaml(const PipelineConfig& cfg);

}  // namespace ppstream
