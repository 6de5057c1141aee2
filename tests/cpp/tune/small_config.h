// The tune tests' small job: PP 2, 4 microbatches, 4 layers, 1F1B, HSDP with 4 replicas and a
// lognormal tail on the reductions (median 2 ms, σ 1). `stash`: 1 MiB per layer and microbatch
// (GPipe holds 4 stashes = 8 MiB, 1F1B at most 2 on rank 0 = 4 MiB), no gradient buffer.
#pragma once

#include <fmt/format.h>

#include <cstdint>

#include "ppstream/config/config.h"

namespace ppstream::tune::testing_small {

inline PipelineConfig small_config(uint64_t seed, bool stash) {
  return load_config_text(fmt::format(R"(
pipeline_parallel_size: 2
micro_batch_num: 4
num_layers: 4
schedule: 1f1b
data_parallel: {{mode: hsdp, shard_size: 1, replicate_size: 4, reduce_grad: inline}}
cost: {{forward_ms_per_layer: 1, backward_ms_per_layer: 2, grad_bytes_per_layer: 1.0e8,
       replicate_bandwidth_gb_per_s: 50{}}}
straggler:
  seed: {}
  distribution: {{kind: lognormal, median_ms: 2, sigma: 1.0, collectives: [reduce_grad]}}
)",
                                      stash ? ", stash_bytes_per_layer: 1048576, grad_buffer_bytes_per_layer: 0" : "", seed),
                          "test");
}

}  // namespace ppstream::tune::testing_small
