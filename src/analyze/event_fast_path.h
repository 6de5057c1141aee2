// The scanner's fast path: dropping an event from its leading keys, before simdjson indexes it,
// for the events that make most of a Kineto trace (host ops no mapper reads, flow arrows).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
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

// What one value of an event fills (the fields read_flat_event reads); END: no value, the
// event's text ends after the literal.
enum class ShapeField : uint8_t { NAME, CAT, PH, PID, TID, TS, DUR, META_NAME, ARG_STR, ARG_INT, SCALAR, END };

// An event's shape: the literal text between its values (keys, colons, commas, braces,
// whitespace, as written) and what each value fills, in the order read_flat_event met them.
struct EventShape {
  struct Part {
    uint32_t lit = 0, len = 0;  // the literal before the value: lits[lit, lit + len)
    ShapeField field = ShapeField::END;
    uint8_t slot = 0;           // ARG_STR / ARG_INT: the RawArgs slot
  };
  std::string lits;         // every part's literal, one after the other
  std::vector<Part> parts;  // the last one is END
  std::string cat;          // the last "cat" value read by this shape that the spec does not refuse
  bool cat_checked = false;
};

// Records the shape of the event read_flat_event reads (value: where a value starts and what it
// fills; end: where it ends; finish: where the event ends).
struct ShapeRecorder {
  std::string_view text;
  EventShape shape{};
  size_t last = 0;  // where the literal since the last value starts

  void value(size_t at, ShapeField field, uint8_t slot) {
    shape.parts.push_back({static_cast<uint32_t>(shape.lits.size()), static_cast<uint32_t>(at - last), field, slot});
    shape.lits.append(text.substr(last, at - last));
  }
  void end(size_t at) { last = at; }
  void finish(size_t at) { value(at, ShapeField::END, 0); }
};

// read_flat_event that also records the event's shape into `rec` (when not null) as it reads.
size_t read_flat_event(const ScanSpec& spec, std::string_view text, RawEvent& ev, ShapeRecorder* rec);

// The event shapes of one file (docs/whatif.md "Benchmark"): Megatron timer events repeat one
// key sequence, so after the first event the next one is read by comparing its literal text
// against a remembered shape (a few word compares per key instead of a walk over every byte) and
// parsing only its values, with read_flat_event's value parsers (a value of another length,
// e.g. a longer number, is read by the shape as read_flat_event reads it). An event that differs
// from every remembered shape in any byte outside its values (a key reordered, added, missing,
// renamed or given twice, an escape in a key, other whitespace) or whose value the parser
// refuses (an escape, an exponent, more than 18 digits, a refused "cat") is read by
// read_flat_event itself, so that the result and every error stay its (and the full parse's);
// one it reads becomes a remembered shape.
class EventShapes {
 public:
  static constexpr size_t kShapes = 4;  // remembered at once (the file's thread_name events and its ops, and spares)
  // read_flat_event's contract and result; `ev` as read_flat_event takes it (index and offset set).
  size_t read(const ScanSpec& spec, std::string_view text, RawEvent& ev);
  size_t matched() const { return matched_; }  // events read by a remembered shape
  size_t learned() const { return learned_; }  // shapes recorded

 private:
  std::array<EventShape, kShapes> shapes_{};
  size_t n_ = 0;      // shapes held
  size_t last_ = 0;   // the one that matched last (tried first)
  size_t next_ = 0;   // the one the next learned shape replaces
  size_t matched_ = 0, learned_ = 0;
};

}  // namespace ppstream::analyze::detail
