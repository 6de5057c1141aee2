// Number and name helpers shared by the readers.
#include "json_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <cstdio>
#include <cstdlib>

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze::detail {
std::optional<int64_t> parse_us_to_ns(std::string_view t, UsFault* why) {
  const auto fault = [why](UsFault f) {
    if (why) *why = f;
    return std::nullopt;
  };
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  if (t.empty()) return fault(UsFault::NOT_A_NUMBER);
  // Exactly one optional sign, then a digit or '.': "--5", "-+5", "+-5" are not numbers.
  bool neg = t.front() == '-';
  std::string_view s = (neg || t.front() == '+') ? t.substr(1) : t;
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s.front())) || s.front() == '.'))
    return fault(UsFault::NOT_A_NUMBER);
  if (s.find_first_of("eE") != std::string_view::npos) {
    // Decimal digits, one point and an exponent only: strtod also reads hexadecimal ("0x1e3").
    if (s.find_first_not_of("0123456789.eE+-") != std::string_view::npos) return fault(UsFault::NOT_A_NUMBER);
    std::string copy(neg ? "-" : "");
    copy += s;
    char* end = nullptr;
    double v = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size()) return fault(UsFault::NOT_A_NUMBER);
    // Out of int64 ns (about ±292 years) llround is undefined: not a time a trace can hold
    // (strtod gives ±inf for a number beyond a double).
    if (!std::isfinite(v) || std::fabs(v * 1000.0) >= 9.2e18) return fault(UsFault::OUT_OF_RANGE);
    return static_cast<int64_t>(std::llround(v * 1000.0));
  }
  size_t dot = s.find('.');
  std::string_view ip = s.substr(0, dot);
  std::string_view fp = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
  if (ip.empty() && fp.empty()) return fault(UsFault::NOT_A_NUMBER);
  int64_t whole = 0;
  if (!ip.empty()) {
    auto r = std::from_chars(ip.data(), ip.data() + ip.size(), whole);
    if (r.ptr != ip.data() + ip.size()) return fault(UsFault::NOT_A_NUMBER);
    if (r.ec != std::errc{}) return fault(UsFault::OUT_OF_RANGE);  // digits only, beyond int64
  }
  int64_t frac = 0;
  int digits = 0;
  for (char c : fp) {
    if (c < '0' || c > '9') return fault(UsFault::NOT_A_NUMBER);
    if (digits < 3) {
      frac = frac * 10 + (c - '0');
      ++digits;
    } else if (digits == 3) {  // round half up on the 4th decimal, ignore the rest
      if (c >= '5') ++frac;
      ++digits;
    }
  }
  while (digits < 3) {
    frac *= 10;
    ++digits;
  }
  if (whole > (std::numeric_limits<int64_t>::max() - 1000) / 1000) return fault(UsFault::OUT_OF_RANGE);  // ns overflow
  int64_t ns = whole * 1000 + frac;
  return neg ? -ns : ns;
}

std::optional<int64_t> as_int(simdjson::ondemand::value v) {
  simdjson::ondemand::json_type t;
  if (v.type().get(t)) return std::nullopt;
  if (t == simdjson::ondemand::json_type::number) {
    int64_t i = 0;
    if (!v.get_int64().get(i)) return i;
    double d = 0;
    if (!v.get_double().get(d) && std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
      return static_cast<int64_t>(d);
    }
    return std::nullopt;
  }
  if (t == simdjson::ondemand::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return std::nullopt;
    int64_t i = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), i);
    if (r.ec == std::errc{} && r.ptr == s.data() + s.size()) return i;
  }
  return std::nullopt;
}

std::optional<double> as_double(simdjson::ondemand::value v) {
  simdjson::ondemand::json_type t;
  if (v.type().get(t)) return std::nullopt;
  if (t == simdjson::ondemand::json_type::number) {
    double d = 0;
    if (!v.get_double().get(d)) return d;
    return std::nullopt;
  }
  if (t == simdjson::ondemand::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return std::nullopt;
    std::string copy(s);
    char* end = nullptr;
    double d = std::strtod(copy.c_str(), &end);
    if (!copy.empty() && end == copy.c_str() + copy.size()) return d;
  }
  return std::nullopt;
}

std::optional<std::string_view> scalar_text(simdjson::ondemand::value v) {
  simdjson::ondemand::json_type t;
  if (v.type().get(t)) return std::nullopt;
  std::string_view text;
  if (t == simdjson::ondemand::json_type::number) return v.raw_json_token();
  if (t == simdjson::ondemand::json_type::string && !v.get_string().get(text)) return text;
  return std::nullopt;
}

std::optional<int64_t> as_us_ns(simdjson::ondemand::value v) {
  const std::optional<std::string_view> text = scalar_text(v);
  return text ? parse_us_to_ns(*text) : std::nullopt;
}

std::string truncation_message(const std::string& path, uint64_t end_offset, size_t events_read) {
  return fmt::format("{}: byte {} (end of file{}): the JSON document is cut short; expected the closing ']' / '}}' "
                     "of a complete trace (a truncated file?)",
                     path, end_offset, events_read > 0 ? fmt::format(", after event #{}", events_read - 1) : "");
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

static bool ieq(char a, char b) {
  return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
}

bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), s.begin(), ieq);
}

bool icontains(std::string_view s, std::string_view needle) {
  return std::search(s.begin(), s.end(), needle.begin(), needle.end(), ieq) != s.end();
}

}  // namespace ppstream::analyze::detail
