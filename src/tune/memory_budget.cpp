// parse_memory_budget: `tune --memory-budget` text to a whole number of bytes (tune.h).
#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "ppstream/tune/tune.h"

namespace ppstream::tune {

double parse_memory_budget(const std::string& text) {
  auto fail = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("tune --memory-budget {}: {}", text.empty() ? "''" : text, why));
  };
  constexpr std::string_view kExpected =
      "expected a whole number of bytes > 0, optionally with a unit: B, KiB, MiB, GiB, TiB (powers of 1024) or "
      "KB, MB, GB, TB (powers of 1000), e.g. 85899345920 or 80GiB";
  // The number: digits with at most one '.', no sign, exponent, inf or nan.
  size_t end = 0;
  bool dot = false, digit = false;
  for (; end < text.size(); ++end) {
    const char c = text[end];
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!digit) throw fail(std::string(kExpected));
  size_t unit_at = end;
  while (unit_at < text.size() && text[unit_at] == ' ') ++unit_at;
  const std::string unit = text.substr(unit_at);
  static constexpr std::array<std::pair<std::string_view, double>, 9> kUnits = {{{"B", 1.0},
                                                                                 {"KiB", 1024.0},
                                                                                 {"MiB", 1048576.0},
                                                                                 {"GiB", 1073741824.0},
                                                                                 {"TiB", 1099511627776.0},
                                                                                 {"KB", 1e3},
                                                                                 {"MB", 1e6},
                                                                                 {"GB", 1e9},
                                                                                 {"TB", 1e12}}};
  // An exponent is refused as one (docs/tune.md), not as an unknown unit 'e9'.
  if (unit.size() >= 2 && (unit[0] == 'e' || unit[0] == 'E') &&
      (std::isdigit(static_cast<unsigned char>(unit[1])) != 0 || unit[1] == '+' || unit[1] == '-'))
    throw fail(fmt::format("an exponent ('{}') is not taken: write the bytes out (1e9 as 1000000000) or with a unit "
                           "(1GB); {}",
                           unit, kExpected));
  double scale = 0;
  if (unit.empty()) scale = 1;
  for (const auto& [name, s] : kUnits)
    if (unit == name) scale = s;
  if (scale == 0) {
    const bool letter = unit.size() == 1 && std::string_view("KkMmGgTt").find(unit[0]) != std::string_view::npos;
    throw fail(fmt::format("unknown unit '{}'{}; {}", unit,
                           letter ? fmt::format(" ({}iB or {}B?)", static_cast<char>(std::toupper(unit[0])), static_cast<char>(std::toupper(unit[0]))) : "",
                           kExpected));
  }
  const double number = std::strtod(text.substr(0, end).c_str(), nullptr);
  const double bytes = number * scale;
  if (!(bytes > 0)) throw fail("expected a budget > 0 bytes");
  if (!std::isfinite(bytes) || bytes > 9.2e18) throw fail("expected at most 2^63 bytes");
  if (std::floor(bytes) != bytes) throw fail(fmt::format("{} bytes is not a whole number of bytes", bytes));
  return bytes;
}

}  // namespace ppstream::tune
