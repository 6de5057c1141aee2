// verify() on a topology already built for its set: the simulator builds one Topology per set
// and shares it between the verifier and the engine run (one index build instead of two).
#pragma once

#include <vector>

#include "engine/topology.h"
#include "ppstream/verify/verify.h"

namespace ppstream {

std::vector<Violation> verify_topology(const engine::Topology& topo, const VerifyOptions& opts = {});

}  // namespace ppstream
