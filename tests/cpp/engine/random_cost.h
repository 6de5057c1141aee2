// A CostModel for tape tests (tape_test.cpp, tape_batch_test.cpp): every call a value from a
// hash, so that a replay that reorders or changes an addition gives another result.
#pragma once

#include <cstdint>

#include "ppstream/engine/engine.h"

namespace ppstream::testing {

// Every CostModel call a value from a hash of (seed, call, rank, index): about a quarter zero,
// the rest with fractions that round when added, so a replay that reorders an addition differs.
class RandomCost : public CostModel {
 public:
  explicit RandomCost(uint64_t seed) : seed_(seed) {}
  double compute_ms(const Program& p, const Instr& i) const override { return v(p, i, 1, 5.0); }
  double batch_ms(const Program& p, const Instr& i) const override { return v(p, i, 2, 1.3); }
  double collective_ms(const Program& p, const Instr& i) const override { return v(p, i, 3, 7.1); }
  double arrival_delay_ms(const Program& p, const Instr& i) const override { return v(p, i, 4, 11.7); }
  double external_arrival_ms(const Program& p, const Instr& i) const override { return v(p, i, 5, 13.3); }
  double host_issue_ms(const Program& p, const Instr& i) const override { return v(p, i, 6, 0.37); }
  double launch_delay_ms(const Program& p, const Instr& i) const override { return v(p, i, 7, 0.21); }

 protected:
  uint64_t seed_;
  double v(const Program& p, const Instr& i, uint64_t call, double scale) const {
    uint64_t h = seed_ * 0x9E3779B97F4A7C15ull ^ call * 0xC2B2AE3D27D4EB4Full ^
                 static_cast<uint64_t>(p.rank.v) * 0x165667B19E3779F9ull ^ static_cast<uint64_t>(&i - p.instrs.data());
    h ^= h >> 31;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
    if (h % 4 == 0) return 0.0;
    return scale * static_cast<double>(h >> 11) * 0x1.0p-53;
  }
};

}  // namespace ppstream::testing
