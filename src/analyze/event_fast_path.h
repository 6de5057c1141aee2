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
// of the full parse (chrome_events.cpp parse_event) alone: a "ph" other than X / M (with
// `spec.every_phase` those are kept, and so is one whose text may give a `spec.claim_keys` key), or a host
// category no mapper reads with a name no mapper keeps. False for everything else (another key
// first, one of the three given twice, an escape, a number, device work, launches): the full parse decides, and names errors.
bool dropped_by_leading_keys(const ScanSpec& spec, std::string_view text);

// `text` starts with one event object (more may follow it). Its length when it is a flat event
// this parser reads exactly as the full parse (parse_event) would, and then `ev` holds every
// field the full parse would fill: keys without escapes, each top-level key at most once; "name",
// "cat", "ph" plain strings (ASCII, no escapes); "pid", "tid" integer numbers; "ts", "dur" decimal
// numbers (no exponent); "args" an object whose values are plain strings or numbers (a key of
// `spec.args` as its type asks: a string or an integer number; its "name" a string; each slot and
// "name" filled at most once: a key twice is the full parse's error); any other
// key a plain string, number, true, false or null. Its category must be no host or link category
// of `spec` (those have rules that depend on key order). 0 for anything else, and for an object
// `text` cuts (`ev` then is partly filled and must be reset): the full parse decides and names
// the errors. A Megatron timer event (docs/whatif.md "Input") is such an event: no simdjson
// document is made for it, and the scanner reads it straight from the cursor's chunk.
size_t read_flat_event(const ScanSpec& spec, std::string_view text, RawEvent& ev);

}  // namespace ppstream::analyze::detail
