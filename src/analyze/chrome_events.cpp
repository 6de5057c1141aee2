// Streaming scan of Chrome trace JSON with simdjson on-demand: one pass, one event at a time.
#include "chrome_events.h"

#include <fmt/format.h>

#include <array>

#include "json_input.h"
#include "json_stream.h"
#include "ppstream/analyze/trace_format.h"

namespace ppstream::analyze::detail {
namespace ond = simdjson::ondemand;
namespace tf = ppstream::analyze::trace_format;
namespace {

// Host-side categories no mapper uses: their args are never parsed.
bool launch_category(std::string_view cat) { return cat == "cuda_runtime" || cat == "cuda_driver"; }

bool skipped_category(std::string_view cat) {
  static constexpr std::array<std::string_view, 12> kSkip = {
      "cpu_op", "cuda_runtime", "cuda_driver", "python_function", "enqueue", "dequeue",
      "fwdbwd", "ac2g", "async_npu", "HostToDevice", "async_task_queue", "Trace"};
  for (auto s : kSkip) {
    if (cat == s) return true;
  }
  return false;
}

std::string_view str_or_empty(ond::value v) {
  std::string_view s;
  if (v.get_string().get(s)) return {};
  return s;
}

void read_args(ond::object args, RawArgs& a) {
  for (auto field : args) {
    std::string_view key = field.unescaped_key();
    ond::value v = field.value();
    if (key == "kind") a.kind = str_or_empty(v);
    else if (key == "group") a.group = str_or_empty(v);
    else if (key == "event") a.event = str_or_empty(v);
    else if (key == "instr") a.instr = str_or_empty(v);
    else if (key == "bytes") a.bytes = as_int(v);
    else if (key == "step") a.step = as_int(v);
    else if (key == "name") a.meta_name = str_or_empty(v);
    else if (key == "stream") a.stream = as_int(v);
    else if (key == "Stream Id") a.stream_id = as_int(v);
    else if (key == "Task Type") a.task_type = str_or_empty(v);
    else if (key == "type") a.op_type = str_or_empty(v);
    else if (key == "data_type") a.data_type = str_or_empty(v);
    else if (key == "count") a.count = as_int(v);
    else if (key == "Collective name") a.collective = str_or_empty(v);
    else if (key == "Process Group Name") a.pg_name = str_or_empty(v);
    else if (key == "Process Group Description") a.pg_desc = str_or_empty(v);
    else if (key == "dtype") a.dtype = str_or_empty(v);
    else if (key == "In msg nelems") a.in_nelems = as_int(v);
    else if (key == "Src Rank" || key == "src rank") a.src_rank = as_int(v);  // Kineto / Ascend Plane
    else if (key == "Dst Rank" || key == "dst rank") a.dst_rank = as_int(v);
    else if (key == "correlation") a.correlation = as_int(v);
  }
}

void read_ppstream_meta(ond::object meta, ChromeTop& top) {
  top.ppstream = true;
  for (auto field : meta) {
    std::string_view key = field.unescaped_key();
    ond::value v = field.value();
    if (key == tf::kMetaVersion) {
      top.version = as_int(v).value_or(0);
    } else if (key == tf::kMetaProducer) {
      top.producer = std::string(str_or_empty(v));
    } else if (key == tf::kMetaClock) {
      top.clock = std::string(str_or_empty(v));
    } else if (key == tf::kMetaMetrics) {
      ond::object m;
      std::string_view raw;
      if (!v.get_object().get(m) && !m.raw_json().get(raw)) top.metrics_json = std::string(raw);
    } else if (key == tf::kMetaRanks) {
      ond::object ranks;
      if (v.get_object().get(ranks)) continue;
      for (auto r : ranks) {
        std::string_view rk = r.unescaped_key();
        int64_t rank = 0;
        try {
          rank = std::stoll(std::string(rk));
        } catch (const std::exception&) {
          continue;
        }
        ond::object info;
        if (r.value().get_object().get(info)) continue;
        for (auto f : info) {
          if (f.unescaped_key().value_unsafe() == tf::kMetaPPRank) {
            if (auto pp = as_int(f.value())) top.pp_ranks.emplace_back(rank, static_cast<int32_t>(*pp));
          }
        }
      }
    }
  }
}

// Parses one event's text (cut out of the file at `offset`) and hands it to the sink.
void parse_event(const std::string& path, ond::parser& parser, std::string& text, uint64_t offset, size_t index,
                 const std::function<void(const RawEvent&)>& sink) {
  text.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  RawEvent ev;
  ev.index = index;
  ev.offset = offset;
  ond::document doc = parser.iterate(simdjson::padded_string_view(text.data(), text.size(), text.capacity()));
  ond::object obj = doc.get_object();
  bool skip_args = false, named = false;
  for (auto field : obj) {
    std::string_view key = field.unescaped_key();
    ond::value v = field.value();
    if (key == "ph") {
      std::string_view ph = str_or_empty(v);
      ev.ph = ph.empty() ? '?' : ph.front();
      if (ev.ph != 'X' && ev.ph != 'M') return;  // flows, counters, instants: no reader uses them
    } else if (key == "name") {
      ev.name = str_or_empty(v);
      named = true;
    } else if (key == "cat") {
      ev.cat = str_or_empty(v);
    } else if (key == "pid") {
      ev.pid = as_int(v);
    } else if (key == "tid") {
      ev.tid = as_int(v);
    } else if (key == "ts") {
      ev.ts_ns = as_us_ns(v);
      if (!ev.ts_ns) {
        throw TraceError(fmt::format("{}: byte {}: event #{}: \"ts\" is not a number of µs", path, offset, index));
      }
    } else if (key == "dur") {
      ev.dur_ns = as_us_ns(v);
      if (!ev.dur_ns) {
        throw TraceError(fmt::format("{}: byte {}: event #{}: \"dur\" is not a number of µs", path, offset, index));
      }
    } else if (key == "args") {
      skip_args = (ev.ph != 0 && ev.ph != 'X' && ev.ph != 'M') || skipped_category(ev.cat);
      ond::object args;
      if (ev.ph == 'X' && launch_category(ev.cat) && !v.get_object().get(args)) {
        for (auto f : args) {
          if (f.unescaped_key().value_unsafe() == "correlation") ev.args.correlation = as_int(f.value());
        }
      } else if (!skip_args && !v.get_object().get(args)) {
        read_args(args, ev.args);
      }
    }
    // A host event no reader uses (most of a Kineto trace): stop parsing it here.
    if (named && skipped_category(ev.cat) && !launch_category(ev.cat) && ev.name.substr(0, 13) != "ProfilerStep#") {
      return;
    }
  }
  if (ev.ph != 'X' && ev.ph != 'M') return;
  // Step markers are host ranges (cpu_op on torch_npu) but every reader wants them; launches
  // carry the correlation that puts a kernel in its step.
  if (skipped_category(ev.cat) && ev.name.substr(0, 13) != "ProfilerStep#" &&
      !(launch_category(ev.cat) && ev.args.correlation)) {
    return;
  }
  sink(ev);
}

// The scan's state: the cursor, one simdjson parser reused for every event, the text of the
// value being parsed (the only copy of it) and how many events were read.
struct Scan {
  const std::string& path;
  JsonCursor& cur;
  const std::function<void(const RawEvent&)>& sink;
  ond::parser parser{};
  std::string text{};
  size_t index = 0;

  [[noreturn]] void fail(uint64_t at, const std::string& what) const {
    throw TraceError(fmt::format("{}: byte {}: {}", path, at, what));
  }
  // After a value inside a container: ',' (true, consumed) or `close` (false, consumed).
  bool next_or_close(char close, const char* after) {
    cur.skip_ws();
    const int c = cur.peek();
    if (c < 0) throw JsonCut{cur.offset()};
    cur.advance();
    if (c == ',') return true;
    if (c == close) return false;
    fail(cur.offset() - 1, fmt::format("'{}' after {}; expected ',' or '{}'", static_cast<char>(c), after, close));
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
      text.clear();
      cur.take_value(text);
      try {
        parse_event(path, parser, text, at, index, sink);
      } catch (const simdjson::simdjson_error& e) {
        fail(at, fmt::format("event #{}: malformed JSON ({}); expected a Chrome trace event", index, e.what()));
      }
      ++index;
    } while (next_or_close(']', fmt::format("event #{}", index - 1).c_str()));
  }

  // A top-level value other than traceEvents: cut out; the few we read are parsed.
  void top_value(const std::string& key, ChromeTop& top) {
    const uint64_t at = cur.offset();
    text.clear();
    cur.take_value(text);
    if (key != "distributedInfo" && key != "otherData" && key != "metadata") return;
    text.reserve(text.size() + simdjson::SIMDJSON_PADDING);
    try {
      ond::document doc = parser.iterate(simdjson::padded_string_view(text.data(), text.size(), text.capacity()));
      ond::object obj;
      if (doc.get_object().get(obj)) return;
      for (auto f : obj) {
        const std::string_view k = f.unescaped_key();
        ond::object inner;
        if (key == "distributedInfo") {
          if (k == "rank") top.distributed_rank = as_int(f.value());
        } else if (k == tf::kMetaKey && !f.value().get_object().get(inner)) {
          read_ppstream_meta(inner, top);
        }
      }
    } catch (const simdjson::simdjson_error& e) {
      fail(at, fmt::format("\"{}\": malformed JSON ({})", key, e.what()));
    }
  }
};

}  // namespace

void scan_chrome(const std::string& path, ChromeTop& top, const std::function<void(const RawEvent&)>& sink) {
  ByteSource src(path);
  JsonCursor cur(src);
  Scan scan{path, cur, sink};
  try {
    cur.skip_ws();
    const int first = cur.peek();
    if (first == '[') {
      top.bare_array = true;
      scan.events();
    } else if (first == '{') {
      cur.advance();
      bool found = false;
      cur.skip_ws();
      if (cur.peek() == '}') cur.advance();
      else do {
        cur.skip_ws();
        const uint64_t at = cur.offset();
        if (cur.peek() < 0) throw JsonCut{at};
        if (cur.peek() != '"') scan.fail(at, "expected a key string");
        const std::string key = cur.take_string();
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
          scan.top_value(key, top);
        }
      } while (scan.next_or_close('}', "a top-level value"));
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
}

}  // namespace ppstream::analyze::detail
