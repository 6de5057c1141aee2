// One cost-model value, checked: the engine and the tape's replay ask the cost model through
// here, so both refuse the same values with the same message.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include <fmt/format.h>

#include "ppstream/engine/engine.h"
#include "ppstream/program/format.h"

namespace ppstream::engine {

// A negative or non-finite duration would run time backwards: std::invalid_argument naming the
// rank, the instruction index and text, and the CostModel call (`what`).
inline double checked_cost(double ms, const Program& p, int32_t i, const char* what) {
  if (!(ms >= 0.0) || !std::isfinite(ms))
    throw std::invalid_argument(fmt::format("cost model: {} of r{} #{} {} is {} ms; expected a finite value >= 0", what,
                                            p.rank.v, i, to_text(p, p.instrs[i]), ms));
  return ms;
}

}  // namespace ppstream::engine
