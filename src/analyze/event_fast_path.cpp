// The scanner's fast path over an event's leading keys (event_fast_path.h).
#include "event_fast_path.h"

#include <optional>

namespace ppstream::analyze::detail {

bool dropped_by_leading_keys(const ScanSpec& spec, std::string_view t) {
  size_t p = 1;  // after '{'
  const auto ws = [&] {
    while (p < t.size() && (t[p] == ' ' || t[p] == '\n' || t[p] == '\r' || t[p] == '\t')) ++p;
  };
  // A string without escapes at p: its text, p after its closing quote; nullopt otherwise.
  const auto plain_string = [&]() -> std::optional<std::string_view> {
    if (p >= t.size() || t[p] != '"') return std::nullopt;
    size_t q = p + 1;
    while (q < t.size() && t[q] != '"' && t[q] != '\\') ++q;
    if (q >= t.size() || t[q] != '"') return std::nullopt;
    const std::string_view v = t.substr(p + 1, q - p - 1);
    p = q + 1;
    return v;
  };
  bool named = false, host = false, link = false, kept = false;
  for (;;) {
    ws();
    const auto key = plain_string();
    if (!key || (*key != "ph" && *key != "cat" && *key != "name")) return false;
    ws();
    if (p >= t.size() || t[p] != ':') return false;
    ++p;
    ws();
    const auto v = plain_string();
    if (!v) return false;
    if (*key == "ph") {
      const char ph = v->empty() ? '?' : v->front();
      if (ph != 'X' && ph != 'M') return true;
    } else if (*key == "name") {
      named = true;
      kept = kept_name(spec, *v);
    } else {
      host = listed(spec.host_categories, *v);
      link = spec.link && listed(spec.link_categories, *v);
      if (!host || link) return false;  // device work and launches are parsed in full
    }
    if (named && host && !link && !kept) return true;
    ws();
    if (p >= t.size() || t[p] != ',') return false;
    ++p;
  }
}

}  // namespace ppstream::analyze::detail
