// "1st", "2nd", "3rd", "4th", … for messages that count matched operations (engine, verifier).
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <string>

namespace ppstream::engine {

inline std::string ordinal(size_t n) {
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                    ? "st"
                       : n % 10 == 2                    ? "nd"
                       : n % 10 == 3                    ? "rd"
                                                        : "th";
  return fmt::format("{}{}", n, suffix);
}

}  // namespace ppstream::engine
