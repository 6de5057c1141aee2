// The configuration grid `ppstream verify --grid` checks: every schedule shape, transport,
// overlap flag, DP mode and reduction policy in the ranges of the engine issue.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/engine/engine.h"

namespace ppstream {

struct GridOptions {
  int32_t max_pp = 8;            // PP 1..max_pp
  int32_t max_vpp = 4;           // VPP 1..max_vpp
  int32_t max_microbatches = 32; // microbatch counts: pp·{1,2,4,…} and pp+1 up to this
  bool expanded = false;         // also build every DP rank (shard 2 × replicate 2)
  std::vector<PlatformKind> platforms = {PlatformKind::STRICT, PlatformKind::CPU_SERIAL};
};

struct GridResult {
  int64_t configs = 0;
  int64_t programs_verified = 0;  // rank programs
  int64_t instructions = 0;
  std::vector<std::string> failures;  // "<config summary>: <first violation>"
};

// Throws std::invalid_argument when a max is below 1 or above the config's limits (PP, VPP and
// PP x VPP at most 65536, microbatches at most 2^20).
std::vector<PipelineConfig> grid_configs(const GridOptions& opts);
std::string summarize(const PipelineConfig& cfg);  // one line, e.g. "pp4 vpp2 mb16 multi_stream ..."
// Compiles and verifies every grid config; `progress(done, total)` if given.
GridResult verify_grid(const GridOptions& opts, const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace ppstream
