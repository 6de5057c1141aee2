// Streaming scan of Chrome trace JSON with simdjson on-demand: one pass, one event at a time.
#include "chrome_events.h"

#include <fmt/format.h>

#include <array>

#include "json_input.h"
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

void scan_events(const std::string& path, const simdjson::padded_string& buf, ond::array events,
                 const std::function<void(const RawEvent&)>& sink, const char*& loc, size_t& index) {
  for (auto item : events) {
    ond::object obj;
    RawEvent ev;
    ev.index = index;
    if (item.current_location().get(loc)) loc = nullptr;
    ev.offset = loc ? static_cast<size_t>(loc - buf.data()) : 0;
    if (item.get_object().get(obj)) {
      throw TraceError(fmt::format("{}event #{}: expected an event object", where(path, buf, loc),
                                   index));
    }
    bool skip_args = false;
    for (auto field : obj) {
      std::string_view key = field.unescaped_key();
      ond::value v = field.value();
      if (key == "ph") {
        std::string_view ph = str_or_empty(v);
        ev.ph = ph.empty() ? '?' : ph.front();
      } else if (key == "name") {
        ev.name = str_or_empty(v);
      } else if (key == "cat") {
        ev.cat = str_or_empty(v);
      } else if (key == "pid") {
        ev.pid = as_int(v);
      } else if (key == "tid") {
        ev.tid = as_int(v);
      } else if (key == "ts") {
        ev.ts_ns = as_us_ns(v);
        if (!ev.ts_ns) {
          throw TraceError(fmt::format("{}event #{}: \"ts\" is not a number of µs",
                                       where(path, buf, loc), index));
        }
      } else if (key == "dur") {
        ev.dur_ns = as_us_ns(v);
        if (!ev.dur_ns) {
          throw TraceError(fmt::format("{}event #{}: \"dur\" is not a number of µs",
                                       where(path, buf, loc), index));
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
    }
    ++index;
    if (ev.ph != 'X' && ev.ph != 'M') continue;
    // Step markers are host ranges (cpu_op on torch_npu) but every reader wants them; launches
    // carry the correlation that puts a kernel in its step.
    if (skipped_category(ev.cat) && ev.name.substr(0, 13) != "ProfilerStep#" &&
        !(launch_category(ev.cat) && ev.args.correlation)) {
      continue;
    }
    sink(ev);
  }
}

// Anything after the first JSON value (two arrays written back to back, trailing bytes) is an
// error naming the byte where it starts: reading only the first would drop data silently.
void expect_end(const std::string& path, const simdjson::padded_string& buf, ond::document& doc) {
  const char* loc = nullptr;
  if (doc.current_location().get(loc) == simdjson::OUT_OF_BOUNDS) return;  // simdjson 3.0: "at the end"
  throw TraceError(fmt::format("{}data after the end of the JSON document (a second document written after the "
                               "first?); expected exactly one JSON value",
                               where(path, buf, loc)));
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

}  // namespace

void scan_chrome(const std::string& path, const simdjson::padded_string& buf, ChromeTop& top,
                 const std::function<void(const RawEvent&)>& sink) {
  if (buf.size() > 0xFFFFFFFFull) {
    throw TraceError(fmt::format("{}: {} bytes exceeds simdjson's 4 GiB document limit", path,
                                 buf.size()));
  }
  ond::parser parser;
  const char* loc = buf.data();
  size_t index = 0;
  try {
    ond::document doc = parser.iterate(buf);
    ond::json_type type = doc.type();
    if (type == ond::json_type::array) {
      top.bare_array = true;
      scan_events(path, buf, doc.get_array(), sink, loc, index);
      expect_end(path, buf, doc);
      return;
    }
    if (type != ond::json_type::object) {
      throw TraceError(fmt::format("{}: byte 0: expected a JSON array of trace events or an object "
                                   "with \"traceEvents\"",
                                   path));
    }
    bool found = false;
    for (auto field : doc.get_object()) {
      std::string_view key = field.unescaped_key();
      if (key == "traceEvents") {
        found = true;
        scan_events(path, buf, field.value().get_array(), sink, loc, index);
      } else if (key == "distributedInfo") {
        ond::object info;
        if (field.value().get_object().get(info)) continue;
        for (auto f : info) {
          if (f.unescaped_key().value_unsafe() == "rank") top.distributed_rank = as_int(f.value());
        }
      } else if (key == "otherData" || key == "metadata") {
        ond::object other;
        if (field.value().get_object().get(other)) continue;
        for (auto f : other) {
          ond::object meta;
          if (f.unescaped_key().value_unsafe() == tf::kMetaKey && !f.value().get_object().get(meta)) {
            read_ppstream_meta(meta, top);
          }
        }
      }
    }
    if (!found) {
      throw TraceError(fmt::format("{}: no \"traceEvents\" key: expected a Chrome trace object",
                                   path));
    }
    expect_end(path, buf, doc);
  } catch (const simdjson::simdjson_error& e) {
    if (is_truncation(e.error())) throw TraceError(truncation_message(path, buf, e.what(), index));
    throw TraceError(fmt::format("{}event #{}: malformed JSON ({}); expected a Chrome trace event",
                                 where(path, buf, loc), index, e.what()));
  }
}

}  // namespace ppstream::analyze::detail
