// Two reductions on one communicator from two streams with no event between them: s1 reduces
// on `reduce`, s0 (the sync last stage) on compute, issued later (the old lowering's
// communicator-order violation; docs/semantics.md "Communicators"). One rank, two local stages;
// `expanded`: every rank of shard × replicate. Shared by communicator_test.cpp and tape_test.cpp.
#pragma once

#include <string>

namespace ppstream::testing {

inline std::string racing_reductions(int shard, int replicate, bool expanded) {
  // Built by append, not "literal" + std::string&&: GCC 12 -O2 warns -Wrestrict on the latter
  // (GCC bug 105329), as in src/config/yaml_out.cpp.
  std::string out = std::string("world pp=1 vpp=2 shard=").append(std::to_string(shard));
  out.append(" replicate=").append(std::to_string(replicate)).append(" expanded=").append(expanded ? "1" : "0");
  out.append(" mode=hsdp policy=async\n");
  for (int r = 0; r < (expanded ? shard * replicate : 1); ++r) {
    const std::string p = std::string("r").append(std::to_string(r)).append(" ");
    out += p + "compute F mb0 s0\n" + p + "compute F mb0 s1\n" + p + "compute B mb0 s1\n" + p +
           "compute RECORD compute_ready[s1]\n" + p + "reduce WAIT compute_ready[s1]\n" + p +
           "reduce REDUCE_GRAD s1\n" + p + "reduce RECORD reduce_done[s1]\n" + p + "compute B mb0 s0\n" + p +
           "compute REDUCE_GRAD s0\n" + p + "compute WAIT reduce_done[s1]\n" + p + "compute OPT_STEP\n";
  }
  return out;
}

}  // namespace ppstream::testing
