// Streaming scan of Chrome trace JSON with simdjson on-demand: one pass, one event at a time.
#include "chrome_events.h"

#include <fmt/format.h>

#include "event_fast_path.h"
#include "json_input.h"
#include "json_stream.h"

namespace ppstream::analyze::detail {
namespace ond = simdjson::ondemand;
namespace {

std::string_view str_or_empty(ond::value v) {
  std::string_view s;
  if (v.get_string().get(s)) return {};
  return s;
}

// A "ts" / "dur" value in ns. A number beyond int64 ns (about ±292 years, ±9.2e15 µs) is not a
// time a trace can hold: said so with its text, apart from a value that is not a number at all.
int64_t us_ns_or_throw(ond::value v, std::string_view key, const std::string& path, uint64_t offset, size_t index) {
  if (const std::optional<std::string_view> t = scalar_text(v)) {
    const std::string_view text = *t;
    UsFault why = UsFault::NOT_A_NUMBER;
    if (auto ns = parse_us_to_ns(text, &why)) return *ns;
    if (why == UsFault::OUT_OF_RANGE) {
      const std::string_view shown = text.substr(0, 40);
      throw TraceError(fmt::format("{}: byte {}: event #{}: \"{}\" {}{} µs is out of range; expected |value| < "
                                   "9.2e15 µs (times are held as int64 ns)",
                                   path, offset, index, key, shown, shown.size() < text.size() ? "…" : ""));
    }
  }
  throw TraceError(fmt::format("{}: byte {}: event #{}: \"{}\" is not a number of µs", path, offset, index, key));
}

void read_arg(const ArgKey& k, ond::value v, RawArgs& a) {
  if (k.type == ArgKey::STRING) {
    a.str[k.slot] = str_or_empty(v);
  } else {
    a.num[k.slot] = as_int(v);
    a.num_given |= 1u << k.slot;
  }
}

// A field's key as written (just after its opening quote); before unescaped_key, which consumes it.
const char* key_raw(simdjson::simdjson_result<ond::field>& f) { return f.key().value().raw(); }

// The keys one event gives that the reader reads: a key given twice is an error (read as it
// is, the last value would win and the figures change silently), as a top-level key twice.
struct SeenKeys {
  const std::string& path;
  uint64_t offset;  // the event's byte
  size_t index;
  const char* text;  // the event's text (for the key's byte)
  unsigned top = 0;  // bits: keys of kTopKeys
  std::array<std::string_view, 64> args{};  // args keys read (the spec's, and "name"); 64 at most tracked
  size_t n_args = 0;

  static constexpr std::array<std::string_view, 8> kTopKeys = {"ph", "name", "cat", "pid", "tid", "ts", "dur", "args"};

  // `raw`: the key's text in the event, just after its opening quote (taken before unescaped_key).
  [[noreturn]] void twice(std::string_view shown, const char* raw) const {
    throw TraceError(fmt::format("{}: byte {}: event #{}: key \"{}\" given twice in one event (again at byte {}); "
                                 "expected each key once",
                                 path, offset, index, shown, offset + static_cast<uint64_t>(raw - text) - 1));
  }
  void top_key(std::string_view key, const char* raw) {
    for (size_t i = 0; i < kTopKeys.size(); ++i) {
      if (kTopKeys[i] != key) continue;
      if (top & (1u << i)) twice(key, raw);
      top |= 1u << i;
      return;
    }
  }
  void arg_key(std::string_view key, const char* raw) {
    for (size_t i = 0; i < n_args; ++i)
      if (args[i] == key) twice(fmt::format("args.{}", key), raw);
    if (n_args < args.size()) args[n_args++] = key;
  }
};

void read_args(const ScanSpec& spec, ond::object args, RawArgs& a, SeenKeys& seen) {
  for (auto field : args) {
    const char* raw = key_raw(field);
    std::string_view key = field.unescaped_key();
    if (key == "name") {
      seen.arg_key(key, raw);
      a.meta_name = str_or_empty(field.value());
      continue;
    }
    for (const ArgKey& k : spec.args) {
      if (k.key == key) {
        seen.arg_key(key, raw);
        read_arg(k, field.value(), a);
        break;
      }
    }
  }
}

// Parses one event's text (cut out of the file at `offset`) and hands it to the sink.
// `text` is followed by at least JsonCursor::kPadding readable bytes (take_value_view).
void parse_event(const std::string& path, const ScanSpec& spec, ond::parser& parser, std::string_view text,
                 uint64_t offset, size_t index, const std::function<void(const RawEvent&)>& sink) {
  static_assert(JsonCursor::kPadding >= simdjson::SIMDJSON_PADDING);
  if (spec.flat_events) {  // (an event the chunk cut: Scan::events read the others in place)
    RawEvent flat;
    flat.index = index;
    flat.offset = offset;
    if (read_flat_event(spec, text, flat) == text.size()) {
      // No host or link category (read_flat_event refuses those): only "ph" decides, as below.
      if (flat.ph == 'X' || flat.ph == 'M' || spec.every_phase || spec.claimed(flat.args)) sink(flat);
      return;
    }
  }
  if (dropped_by_leading_keys(spec, text)) return;
  RawEvent ev;
  ev.index = index;
  ev.offset = offset;
  ond::document doc =
      parser.iterate(simdjson::padded_string_view(text.data(), text.size(), text.size() + JsonCursor::kPadding));
  ond::object obj = doc.get_object();
  bool skip_args = false, named = false;
  bool host = false, link = false, kept = false;  // the spec's lists, looked up once per event
  SeenKeys seen{path, offset, index, text.data()};
  bool may_claim = false;  // set with "ph" (an event without one: below)
  for (auto field : obj) {
    const char* raw = key_raw(field);
    std::string_view key = field.unescaped_key();
    seen.top_key(key, raw);
    ond::value v = field.value();
    if (key == "ph") {
      std::string_view ph = str_or_empty(v);
      ev.ph = ph.empty() ? '?' : ph.front();
      // flows, counters, instants (unless the event may claim to be a reader's: its args decide)
      if (ev.ph != 'X' && ev.ph != 'M' && !spec.every_phase && !(may_claim = spec.may_claim(text))) return;
    } else if (key == "name") {
      ev.name = str_or_empty(v);
      named = true;
      kept = kept_name(spec, ev.name);
    } else if (key == "cat") {
      ev.cat = str_or_empty(v);
      host = listed(spec.host_categories, ev.cat);
      link = spec.link && listed(spec.link_categories, ev.cat);
    } else if (key == "pid") {
      ev.pid = as_int(v);
    } else if (key == "tid") {
      ev.tid = as_int(v);
    } else if (key == "ts" || key == "dur") {
      (key == "ts" ? ev.ts_ns : ev.dur_ns) = us_ns_or_throw(v, key, path, offset, index);
    } else if (key == "args") {
      ev.args_null = v.is_null();
      skip_args = (ev.ph != 0 && ev.ph != 'X' && ev.ph != 'M' && !spec.every_phase && !may_claim) || host;
      ond::object args;
      if (ev.ph == 'X' && link && !v.get_object().get(args)) {
        for (auto f : args) {
          const char* arg_raw = key_raw(f);
          if (f.unescaped_key().value_unsafe() == spec.link->key) {
            seen.arg_key(spec.link->key, arg_raw);
            read_arg(*spec.link, f.value(), ev.args);
          }
        }
      } else if (!skip_args && !v.get_object().get(args)) {
        read_args(spec, args, ev.args, seen);
      }
    }
    // A host event no mapper uses (most of a Kineto trace): stop parsing it here.
    if (named && host && !link && !kept) return;
  }
  if (ev.ph != 'X' && ev.ph != 'M' && !spec.every_phase && !spec.claimed(ev.args)) return;
  // Host events reach the sink only as the spec says: kept names (step markers) and link
  // categories carrying the link key (Kineto launches: the correlation that puts a kernel in its step).
  if (host && !kept && !(link && ev.args.num[spec.link->slot])) return;
  sink(ev);
}

// The scan's state: the cursor, one simdjson parser reused for every event, the text of the
// value being parsed (the only copy of it) and how many events were read.
struct Scan {
  const std::string& path;
  const ScanSpec& spec;
  JsonCursor& cur;
  const std::function<void(const RawEvent&)>& sink;
  const std::function<void(const TopValue&)>& top_sink;
  ond::parser parser{};
  std::string text{};
  size_t index = 0;
  EventShapes shapes{};  // the file's event shapes (flat events read in place)

  [[noreturn]] void fail(uint64_t at, const std::string& what) const {
    throw TraceError(fmt::format("{}: byte {}: {}", path, at, what));
  }
  // After a value inside a container: ',' (true, consumed) or `close` (false, consumed).
  // `after` names the value for the error; a callable, so that the name is made only on error.
  template <typename After>
  bool next_or_close(char close, const After& after) {
    cur.skip_ws();
    const int c = cur.peek();
    if (c < 0) throw JsonCut{cur.offset()};
    cur.advance();
    if (c == ',') return true;
    if (c == close) return false;
    fail(cur.offset() - 1, fmt::format("'{}' after {}; expected ',' or '{}'", static_cast<char>(c), after(), close));
  }

  // A flat event (event_fast_path.h) read in place from the cursor's chunk (by a remembered
  // shape where it has one) and consumed; false
  // (nothing consumed) for any other, and for one the chunk cuts. No host or link category
  // reaches here: only "ph" decides, as in parse_event.
  bool flat_event_in_place(uint64_t at) {
    RawEvent ev;
    ev.index = index;
    ev.offset = at;
    const size_t n = shapes.read(spec, cur.chunk_rest(), ev);
    if (n == 0) return false;
    cur.skip(n);
    if (ev.ph == 'X' || ev.ph == 'M' || spec.every_phase || spec.claimed(ev.args)) sink(ev);
    return true;
  }

  // traceEvents (the cursor is on its '['): every event, one at a time.
  void events() {
    cur.advance();
    cur.skip_ws();
    if (cur.peek() == ']') {
      cur.advance();
      return;
    }
    do {
      cur.skip_ws();
      const uint64_t at = cur.offset();
      const int c = cur.peek();
      if (c < 0) throw JsonCut{at};
      if (c != '{') fail(at, fmt::format("event #{}: expected an event object", index));
      if (!spec.flat_events || !flat_event_in_place(at)) {
        const std::string_view event = cur.take_value_view(text);
        try {
          parse_event(path, spec, parser, event, at, index, sink);
        } catch (const simdjson::simdjson_error& e) {
          fail(at, fmt::format("event #{}: malformed JSON ({}); expected a Chrome trace event", index, e.what()));
        }
      }
      ++index;
    } while (next_or_close(']', [&] { return fmt::format("event #{}", index - 1); }));
  }

  // A top-level value other than traceEvents: cut out; those of spec.top_keys go to the top sink.
  void top_value(const std::string& key) {
    const uint64_t at = cur.offset();
    text.clear();
    cur.take_value(text);
    if (listed(spec.top_keys, key)) top_sink(TopValue{key, text, at});
  }
};

}  // namespace

void read_top_object(const std::string& path, const TopValue& value, const std::function<void(ond::object)>& read) {
  std::string text = value.json;
  text.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  ond::parser parser;
  try {
    ond::document doc = parser.iterate(simdjson::padded_string_view(text.data(), text.size(), text.capacity()));
    ond::object obj;
    if (doc.get_object().get(obj)) return;
    read(obj);
  } catch (const simdjson::simdjson_error& e) {
    throw TraceError(fmt::format("{}: byte {}: \"{}\": malformed JSON ({})", path, value.offset, value.key, e.what()));
  }
}

size_t scan_chrome(const std::string& path, const ScanSpec& spec, const std::function<void(const RawEvent&)>& sink,
                   const std::function<void(const TopValue&)>& top_sink) {
  ByteSource src(path);
  JsonCursor cur(src);
  Scan scan{path, spec, cur, sink, top_sink};
  try {
    // A UTF-8 byte-order mark at the start (some Windows tools write one; RFC 8259 lets a reader
    // ignore it): skipped; byte offsets still count it.
    if (!cur.skip_bom()) scan.fail(cur.offset(), "a byte that is neither JSON nor part of a UTF-8 byte-order mark");
    cur.skip_ws();
    const int first = cur.peek();
    if (first == '[') {
      scan.events();
    } else if (first == '{') {
      cur.advance();
      bool found = false;
      std::vector<std::pair<std::string, uint64_t>> keys;  // (top-level key, its byte): each at most once
      cur.skip_ws();
      if (cur.peek() == '}') cur.advance();
      else do {
        cur.skip_ws();
        const uint64_t at = cur.offset();
        if (cur.peek() < 0) throw JsonCut{at};
        if (cur.peek() != '"') scan.fail(at, "expected a key string");
        const std::string key = cur.take_string();
        for (const auto& [k, first_at] : keys)
          if (k == key)
            scan.fail(at, fmt::format("top-level key \"{}\" given twice (first at byte {}); expected each key once",
                                      key, first_at));
        keys.emplace_back(key, at);
        cur.skip_ws();
        if (cur.peek() < 0) throw JsonCut{cur.offset()};
        if (cur.peek() != ':') scan.fail(cur.offset(), fmt::format("expected ':' after key \"{}\"", key));
        cur.advance();
        cur.skip_ws();
        if (key == "traceEvents") {
          if (cur.peek() != '[') scan.fail(cur.offset(), "\"traceEvents\": expected an array of events");
          found = true;
          scan.events();
        } else {
          scan.top_value(key);
        }
      } while (scan.next_or_close('}', [] { return std::string("a top-level value"); }));
      if (!found) {
        throw TraceError(fmt::format("{}: no \"traceEvents\" key: expected a Chrome trace object (a communication.json has "
                                     "\"(r0, r1, …)\" or \"stepN\" keys first)",
                                     path));
      }
    } else if (first < 0) {
      throw JsonCut{cur.offset()};
    } else {
      scan.fail(cur.offset(), "expected a JSON array of trace events or an object with \"traceEvents\"");
    }
    // Anything after the first JSON value (two arrays written back to back, trailing bytes) is
    // an error naming the byte where it starts: reading only the first would drop data silently.
    cur.skip_ws();
    if (cur.peek() >= 0) {
      scan.fail(cur.offset(), "data after the end of the JSON document (a second document written after the first?); "
                              "expected exactly one JSON value");
    }
  } catch (const JsonCut& cut) {
    throw TraceError(truncation_message(path, cut.end_offset, scan.index));
  }
  return scan.index;
}

}  // namespace ppstream::analyze::detail
