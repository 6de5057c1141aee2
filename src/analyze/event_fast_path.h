// The scanner's fast path: dropping an event from its leading keys, before simdjson indexes it,
// for the events that make most of a Kineto trace (host ops no mapper reads, flow arrows).
#pragma once

#include <algorithm>
#include <string_view>
#include <vector>

#include "chrome_events.h"

namespace ppstream::analyze::detail {

inline bool listed(const std::vector<std::string_view>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

inline bool kept_name(const ScanSpec& spec, std::string_view name) {
  return std::any_of(spec.kept_prefixes.begin(), spec.kept_prefixes.end(),
                     [&](std::string_view p) { return name.starts_with(p); });
}

// `text` is one event object. True when its leading keys are "ph", "cat" and "name" (in any
// order; Kineto writes them first) with strings without escapes, and they decide the drop rules
// of the full parse (chrome_events.cpp parse_event) alone: a "ph" other than X / M, or a host
// category no mapper reads with a name no mapper keeps. False for everything else (another key
// first, an escape, a number, device work, launches): the full parse decides, and names errors.
bool dropped_by_leading_keys(const ScanSpec& spec, std::string_view text);

}  // namespace ppstream::analyze::detail
