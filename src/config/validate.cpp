// validate(): every rule a PipelineConfig must satisfy, in the order a user would fix them
// (sizes, layers, schedule, data parallelism). Each failure names key, value, rule and a fix.
#include <algorithm>
#include <climits>

#include "config_internal.h"

namespace ppstream::config_detail {
namespace {

constexpr int64_t kMaxStages = 65536;         // pp * vpp; schedules hold O(stages * microbatches)
constexpr int64_t kMaxMicrobatches = 1 << 20;

std::string num(int64_t v) { return std::to_string(v); }

bool given(const PipelineConfig& cfg, const std::string& key) { return cfg.given_keys.count(key) > 0; }

// "key=value" plus " (default)" when the user never wrote the key.
std::string kv(const PipelineConfig& cfg, const std::string& key, const std::string& value) {
  return key + "=" + value + (cfg.given_keys.empty() || given(cfg, key) ? "" : " (default)");
}

void check_range(const Locator& loc, const std::string& key, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo) fail(loc.of(key), key + "=" + num(v) + ": must be at least " + num(lo));
  if (v > hi) fail(loc.of(key), key + "=" + num(v) + ": must be at most " + num(hi));
}

void check_layers(const PipelineConfig& cfg, const Locator& loc) {
  const int32_t stages = cfg.num_stages();
  const std::string stages_text = "the " + num(stages) + " stages (pipeline_parallel_size=" +
                                  num(cfg.pipeline_parallel_size) + " x pipeline_parallel_interleave_num=" +
                                  num(cfg.pipeline_parallel_interleave_num) + ")";
  const bool from_strings = !cfg.layers_per_stage.empty();
  if (!from_strings) {
    if (cfg.num_layers == 0 && !given(cfg, "num_layers") && cfg.stage_layers.empty())
      fail(loc.of("pipeline_parallel_size"),
           "no layers given: set pipeline_parallel_layers_per_stage (one string per PP rank) or num_layers");
    if (cfg.num_layers < stages)
      fail(loc.of("num_layers"), "num_layers=" + num(cfg.num_layers) + " is less than " + stages_text +
                                     "; every stage needs at least one layer");
  }
  if (cfg.stage_layers.size() != static_cast<size_t>(stages))
    fail(loc.of(kLayersKey, {"num_layers"}),
         "stage_layers has " + num(static_cast<int64_t>(cfg.stage_layers.size())) + " entries but " +
             stages_text + " need one each");
  if (!from_strings) {
    check_tiling(cfg, loc, cfg.num_layers);
    return;
  }
  int32_t covered = 0;
  for (const auto& r : cfg.stage_layers) covered = std::max(covered, r.last + 1);
  check_tiling(cfg, loc, covered);
  if (cfg.num_layers != covered)
    fail(loc.of("num_layers", {kLayersKey}),
         "num_layers=" + num(cfg.num_layers) + " disagrees with pipeline_parallel_layers_per_stage, which covers layers 0-" +
             num(covered - 1) + " (" + num(covered) + " layers); fix one of them or drop num_layers");
}

void check_schedule(const PipelineConfig& cfg, const Locator& loc) {
  const int32_t pp = cfg.pipeline_parallel_size, vpp = cfg.pipeline_parallel_interleave_num;
  const int32_t m = cfg.micro_batch_num;
  const std::string where = loc.of("schedule", {"pipeline_parallel_interleave_num"});
  if (is_v_schedule(cfg.schedule)) {
    const std::string name = to_string(cfg.schedule);
    if (vpp != 2)
      fail(where, kv(cfg, "schedule", name) + " places exactly 2 virtual stages on each PP rank (stages r and 2*pipeline_parallel_size-1-r) but pipeline_parallel_interleave_num=" +
                      num(vpp) + "; set pipeline_parallel_interleave_num: 2, or use schedule interleaved_zb");
    if (cfg.schedule == ScheduleKind::DUALPIPEV && m < 2 * pp)
      fail(loc.of("micro_batch_num"),
           "micro_batch_num=" + num(m) + " is below the " + num(2 * pp) + " stages (2 x pipeline_parallel_size=" + num(pp) +
               "); dualpipev needs at least as many microbatches as stages (PyTorch ScheduleDualPipeV); use " +
               num(2 * pp) + " or more, or schedule zbv");
  } else if (is_interleaved(cfg.schedule)) {
    const std::string name = to_string(cfg.schedule);
    const std::string flat = splits_backward(cfg.schedule) ? "zb_h1" : "1f1b";  // its one-stage sibling
    if (vpp == 1)
      fail(where, kv(cfg, "schedule", name) + " needs pipeline_parallel_interleave_num >= 2 (it is 1); use schedule " +
                      flat + ", or set pipeline_parallel_interleave_num to the virtual stages per PP rank");
    if (const int32_t rounds = interleaved_rounds(pp, m); m % rounds != 0) {
      // PyTorch's flexible rounds (ScheduleInterleaved1F1B): rounds = max(1, m / pp) must divide m.
      int32_t lo = m - 1, hi = m + 1;
      while (lo > 1 && lo % interleaved_rounds(pp, lo) != 0) --lo;
      while (hi % interleaved_rounds(pp, hi) != 0) ++hi;
      fail(loc.of("micro_batch_num"),
           "micro_batch_num=" + num(m) + " must be a multiple of its rounds max(1, micro_batch_num / pipeline_parallel_size=" +
               num(pp) + ") = " + num(rounds) + " for " + name + "; use " + num(lo) + " or " + num(hi) +
               ", or schedule " + flat);
    }
  } else if (vpp > 1) {
    fail(where, kv(cfg, "schedule", to_string(cfg.schedule)) + " runs one stage per PP rank but pipeline_parallel_interleave_num=" +
                    num(vpp) + "; use schedule " + (splits_backward(cfg.schedule) ? "interleaved_zb" : "interleaved_1f1b") +
                    ", or pipeline_parallel_interleave_num 1");
  }
}

void check_data_parallel(const PipelineConfig& cfg, const Locator& loc) {
  const std::string mode = std::string("data_parallel.mode=") + to_string(cfg.mode);
  auto where = [&](const std::string& key) { return loc.of(key, {"data_parallel.mode", "data_parallel"}); };
  if (cfg.mode == DPMode::NONE) {
    const std::pair<const char*, std::string> keys[] = {
        {"data_parallel.shard_size", num(cfg.shard_size)},
        {"data_parallel.replicate_size", num(cfg.replicate_size)},
        {"data_parallel.reshard_after_backward", cfg.reshard_after_backward ? "true" : "false"},
        {"data_parallel.max_active_stages", num(cfg.max_active_stages)},
        {"data_parallel.reduce_grad", to_string(cfg.reduce_grad)},
        {"data_parallel.sync_last_reduce", cfg.sync_last_reduce ? "true" : "false"},
        {"data_parallel.reduce_order", to_string(cfg.reduce_order)},
        {"data_parallel.reduce_buckets", num(cfg.reduce_buckets)}};
    for (const auto& [key, value] : keys)
      if (given(cfg, key))
        fail(where(key), std::string(key) + "=" + value + " needs data_parallel.mode fsdp or hsdp (" + mode +
                             "); remove it or set the mode");
    if (cfg.shard_size != 1 || cfg.replicate_size != 1)
      fail(where("data_parallel.mode"), "data_parallel.shard_size=" + num(cfg.shard_size) +
                                            " and data_parallel.replicate_size=" + num(cfg.replicate_size) +
                                            " must be 1 with " + mode + "; set mode fsdp or hsdp");
    if (cfg.reduce_grad != ReducePolicy::NONE)
      fail(where("data_parallel.mode"), std::string("reduce_grad=") + to_string(cfg.reduce_grad) +
                                            " needs data_parallel.mode fsdp or hsdp (" + mode +
                                            "); use reduce_grad none with mode none");
    return;
  }
  const std::string shard = kv(cfg, "data_parallel.shard_size", num(cfg.shard_size));
  const std::string repl = kv(cfg, "data_parallel.replicate_size", num(cfg.replicate_size));
  if (cfg.mode == DPMode::FSDP) {
    if (cfg.replicate_size != 1)
      fail(where("data_parallel.replicate_size"),
           repl + " must be 1 for " + mode + "; use mode hsdp to replicate shard groups");
    if (cfg.shard_size < 2)
      fail(where("data_parallel.shard_size"),
           shard + " must be at least 2 for " + mode + "; set shard_size, or use mode hsdp with shard_size 1 "
                   "for plain data parallelism");
  } else {
    if (cfg.shard_size < 1)
      fail(where("data_parallel.shard_size"), shard + " must be at least 1 for " + mode);
    // replicate_size 1 is one shard group: accepted and run exactly as fsdp (the World, and so
    // every program, depends only on the two sizes), as torchtitan and FSDP's HYBRID_SHARD do.
    if (cfg.replicate_size < 1)
      fail(where("data_parallel.replicate_size"), repl + " must be at least 1 for " + mode);
    if (cfg.shard_size == 1 && cfg.replicate_size == 1)
      fail(where("data_parallel.replicate_size"),
           shard + " and " + repl + " leave " + mode + " without data parallelism; use mode none, or a "
                                                      "size of at least 2");
  }
  if (cfg.reduce_grad == ReducePolicy::NONE)
    fail(where("data_parallel.reduce_grad"),
         "data_parallel.reduce_grad=none needs data_parallel.mode none (" + mode + "); use inline or async");
  const int32_t vpp = cfg.pipeline_parallel_interleave_num;
  if (cfg.max_active_stages < 0 || cfg.max_active_stages > vpp ||
      (given(cfg, "data_parallel.max_active_stages") && cfg.max_active_stages == 0))
    fail(where("data_parallel.max_active_stages"),
         "data_parallel.max_active_stages=" + num(cfg.max_active_stages) +
             " must be between 1 and pipeline_parallel_interleave_num=" + num(vpp) +
             " (stages unsharded at once on a PP rank)");
  int32_t fewest = INT32_MAX;
  for (const LayerRange& r : cfg.stage_layers) fewest = std::min(fewest, r.count());
  if (cfg.reduce_buckets < 1 || (!cfg.stage_layers.empty() && cfg.reduce_buckets > fewest))
    fail(where("data_parallel.reduce_buckets"),
         "data_parallel.reduce_buckets=" + num(cfg.reduce_buckets) + " must be between 1 and " +
             (cfg.stage_layers.empty() ? std::string("the fewest layers of any stage")
                                       : num(fewest) + ", the fewest layers of any stage") +
             " (each bucket holds at least one layer)");
  if (cfg.reduce_buckets > 1 && cfg.reduce_grad == ReducePolicy::ASYNC && cfg.reduce_order == ReduceOrder::PRIORITY)
    fail(where("data_parallel.reduce_buckets"),
         "data_parallel.reduce_buckets=" + num(cfg.reduce_buckets) +
             " cannot be combined with data_parallel.reduce_order=priority (priority queues every reduction "
             "behind the rank's last send, which would undo the buckets); use reduce_buckets 1 or reduce_order program");
  const int64_t world = int64_t{cfg.pipeline_parallel_size} * cfg.shard_size * cfg.replicate_size;
  if (world > INT32_MAX)
    fail(where("data_parallel.replicate_size"),
         "pipeline_parallel_size x shard_size x replicate_size = " + num(world) + " ranks: must be at most " +
             num(INT32_MAX));
}

}  // namespace

void check_sizes(const PipelineConfig& cfg, const Locator& loc) {
  check_range(loc, "pipeline_parallel_size", cfg.pipeline_parallel_size, 1, kMaxStages);
  check_range(loc, "pipeline_parallel_interleave_num", cfg.pipeline_parallel_interleave_num, 1, kMaxStages);
  const int64_t stages = int64_t{cfg.pipeline_parallel_size} * cfg.pipeline_parallel_interleave_num;
  if (stages > kMaxStages)
    fail(loc.of("pipeline_parallel_interleave_num"),
         "pipeline_parallel_size x pipeline_parallel_interleave_num = " + num(stages) + " stages: must be at most " +
             num(kMaxStages));
}

void validate_at(const PipelineConfig& cfg, const Locator& loc) {
  check_sizes(cfg, loc);
  check_range(loc, "micro_batch_num", cfg.micro_batch_num, 1, kMaxMicrobatches);
  if (given(cfg, "num_layers") || cfg.layers_per_stage.empty())
    check_range(loc, "num_layers", cfg.num_layers, given(cfg, "num_layers") ? 1 : 0, kMaxLayers);
  check_layers(cfg, loc);
  check_schedule(cfg, loc);
  check_data_parallel(cfg, loc);
}

}  // namespace ppstream::config_detail

namespace ppstream {
void validate(const PipelineConfig& cfg) { config_detail::validate_at(cfg, config_detail::Locator{}); }
}  // namespace ppstream
