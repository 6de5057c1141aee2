// StragglerModel: how late each member of a collective arrives (the straggler tails of HSDP
// groups), read from the config's `straggler:` section. Delays are a pure function of
// (seed, trial, global rank, collective kind, stage), so a run never depends on the order in
// which the engine asks, and the same seed always gives the same result.
//
//   straggler:
//     seed: 7                        # default 0
//     tails:                         # fixed delays on named members
//       - ranks: [8200, 12300]       # global ranks (rank = pp_rank * dp + dp_index), or
//       - {pp_rank: 2, dp_index: 8}  # the same member named by its coordinates
//         delay_ms: 180              # required, >= 0
//         collectives: [reduce_grad] # reduce_grad | unshard; default both
//         stages: [6]                # default every stage
//     distribution:                  # optional: every member draws an extra delay per collective
//       kind: lognormal              # lognormal | exponential | none
//       median_ms: 0.5               # lognormal: exp(mu); exponential: median = ln2 * mean
//       sigma: 1.0                   # lognormal shape
//       collectives: [reduce_grad]
//
// A collective completes when its slowest member has arrived, plus its transfer time; a member's
// arrival is the time it posted the collective plus its delay here. Not modelled: a straggler's
// delay carrying over into its own later work (each collective draws afresh). A bucketed stage's
// reductions (data_parallel.reduce_buckets) are one reduction here: only its first bucket
// (bucket 0) takes the delay (SimCostModel::arrival_delay_ms).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ppstream/program/ir.h"

namespace ppstream::sim {

enum class CollectiveKind : uint8_t { REDUCE_GRAD, UNSHARD };

struct StragglerTail {
  std::vector<int32_t> ranks;                // global ranks (expanded numbering)
  double delay_ms = 0.0;
  std::vector<CollectiveKind> collectives;   // empty: every kind
  std::vector<int32_t> stages;               // empty: every stage
};

enum class DelayDistribution : uint8_t { NONE, LOGNORMAL, EXPONENTIAL };

// The seed's range, one for every way to give it (straggler.seed, simulate --seed, Python seed=):
// 0 to 2^63 - 1 (YAML integers are signed 64-bit); outside it is refused naming the range.
inline constexpr uint64_t kMaxSeed = 9223372036854775807ULL;
inline constexpr const char* kSeedRange = "an integer from 0 to 9223372036854775807 (2^63 - 1)";

struct StragglerSpec {
  uint64_t seed = 0;
  std::vector<StragglerTail> tails;
  DelayDistribution distribution = DelayDistribution::NONE;
  double median_ms = 0.0;
  double sigma = 1.0;
  std::vector<CollectiveKind> distribution_collectives;  // empty: every kind
};

// Parses the text of the `straggler:` section (as kept in PipelineConfig::extra_sections).
// `dp` resolves {pp_rank, dp_index} members. Throws ConfigError naming the key, line and value.
StragglerSpec parse_straggler_spec(const std::string& yaml_text, int32_t dp);
// The same, checked against the world it will run in: every rank below pp * dp, pp_rank below
// pp, every stage below `num_stages` (a typo'd member or stage is an error, not a no-op).
StragglerSpec parse_straggler_spec(const std::string& yaml_text, const World& world, int32_t num_stages);

class StragglerModel {
 public:
  StragglerModel() = default;
  StragglerModel(StragglerSpec spec, World world, uint64_t trial = 0);
  // Arrival delay (ms) of global rank `rank` at its collective `kind` of `stage`.
  double delay_ms(int32_t global_rank, CollectiveKind kind, Stage stage) const;
  // The slowest member of the collective's group that a one-replica program set leaves outside
  // (every member but dp index 0 of `pp_rank`). UNSHARD's group is the shard group; REDUCE_GRAD
  // reaches the whole DP group of the PP rank, since its reduce-scatter (shard group) feeds an
  // all-reduce (replicate group) whose members each waited for their own shard group. O(dp).
  double slowest_outside_ms(int32_t pp_rank, CollectiveKind kind, Stage stage) const;
  const StragglerSpec& spec() const { return spec_; }

 private:
  StragglerSpec spec_;
  World world_;
  uint64_t trial_ = 0;
};

const char* to_string(CollectiveKind k);

}  // namespace ppstream::sim
