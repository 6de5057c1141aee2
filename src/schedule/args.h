// Argument checks shared by the schedule generators (internal).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ppstream::schedule_detail {

// Throws std::invalid_argument "<fn>: <name>=<value> must be >= <min>".
inline void require_at_least(const char* fn, const char* name, int32_t value, int32_t min) {
  if (value < min)
    throw std::invalid_argument(std::string(fn) + ": " + name + "=" + std::to_string(value) +
                                " must be >= " + std::to_string(min));
}

}  // namespace ppstream::schedule_detail
