// Small configurations shared by the simulator tests.
#pragma once

#include <fmt/format.h>

#include <string>

namespace ppstream::sim::fixtures {

// PP4 × VPP2, 8 microbatches, 8 layers, the seed's P2P flags, HSDP shard × replicate with
// `policy` (inline | async): the YAML text of the pipeline and data_parallel keys only.
inline std::string interleaved_hsdp(int shard, int replicate, const std::string& policy) {
  return fmt::format(
      "pipeline_parallel_size: 4\npipeline_parallel_interleave_num: 2\nmicro_batch_num: 8\nnum_layers: 8\n"
      "pipeline_parallel_overlap_p2p: true\npipeline_parallel_overlap_b_f: true\n"
      "pipeline_parallel_p2p_transport: multi_stream\n"
      "data_parallel: {{mode: hsdp, shard_size: {}, replicate_size: {}, reduce_grad: {}}}\n",
      shard, replicate, policy);
}

}  // namespace ppstream::sim::fixtures
