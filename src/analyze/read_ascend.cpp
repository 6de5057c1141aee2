// Ascend profiler outputs besides trace_view.json: the profiler directory layout,
// step_trace_time.csv and communication.json (per-rank and cluster forms).
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <limits>
#include <regex>

#include "chrome_reader.h"
#include "json_file.h"
#include "json_input.h"
#include "ppstream/analyze/readers.h"

namespace ppstream::analyze::detail {

// nlohmann's what() without its "[json.exception.parse_error.101] " id (our errors say it).
std::string without_json_id(const char* what) {
  std::string w = what;
  if (const auto close = w.find("] "); w.rfind("[json.exception.", 0) == 0 && close != std::string::npos) w.erase(0, close + 2);
  return w;
}

nlohmann::json parse_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TraceError(fmt::format("{}: cannot open file", path));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw TraceError(fmt::format("{}: byte {}: malformed JSON: {}", path, e.byte, without_json_id(e.what())));
  } catch (const nlohmann::json::exception& e) {
    throw TraceError(fmt::format("{}: malformed JSON: {}", path, without_json_id(e.what())));
  }
}

}  // namespace ppstream::analyze::detail

namespace ppstream::analyze {
namespace fs = std::filesystem;
using detail::parse_json_file;
using detail::without_json_id;
using detail::ends_with;

namespace {

// One CSV line split on commas, honouring double quotes ("(0, 1, 2)").
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.emplace_back();
    else if (c != '\r') out.back() += c;
  }
  return out;
}

std::optional<double> to_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> to_int(const std::string& s) {
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc{} || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// The rank a file name in `dir` carries (the regex's first group), if any file matches.
std::optional<Rank> rank_from_file_name(const fs::path& dir, const std::regex& re) {
  std::optional<Rank> rank;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string fname = e.path().filename().string();
    if (!std::regex_match(fname, m, re)) continue;
    auto r = to_int(m[1].str());
    if (!r || *r > std::numeric_limits<int32_t>::max()) {
      throw TraceError(fmt::format("{}: rank '{}' in the file name; expected 0..2147483647", e.path().string(), m[1].str()));
    }
    rank = Rank(static_cast<int32_t>(*r));
  }
  return rank;
}

// A communication.json record ("hcom_allReduce__868_0_1@123…") joined with the HCCL lane op of
// the same name on its rank's timeline.
void join_lane_op(const TraceSet& set, Rank rank, CommOpRecord& rec) {
  const std::string name = rec.op.substr(0, rec.op.find('@'));
  for (const auto& tl : set.ranks) {
    if (tl.rank != rank) continue;
    for (const auto& s : tl.slices) {
      if ((s.kind == SliceKind::COLLECTIVE || s.kind == SliceKind::P2P) && set.strings.str(s.name) == name &&
          tl.streams[s.stream].name.rfind("HCCL ", 0) == 0) {
        rec.lane_group = set.strings.str(s.group);
        rec.lane_bytes = s.bytes;
        rec.lane_ms = static_cast<double>(s.dur_ns) / 1e6;
        return;
      }
    }
  }
}

// The producer's figures are echoed in our report, so each is checked as ours are: times finite
// and non-negative, ratios in [0, 1]; anything else is a TraceError naming file, op and key.
void read_comm_info(const nlohmann::json& info, CommOpRecord& rec) {
  const auto& t = info.at("Communication Time Info");
  auto num = [&](const char* key, double hi) {
    if (!t.contains(key)) return 0.0;
    const double v = t.at(key).get<double>();
    if (!std::isfinite(v) || v < 0 || v > hi)
      throw TraceError(fmt::format("{}: {}: \"{}\" is {}; expected {}", rec.source, rec.op, key, v,
                                   hi == 1.0 ? "a ratio in [0, 1]" : "a finite time >= 0 ms"));
    return v;
  };
  constexpr double kAnyTime = std::numeric_limits<double>::max();
  rec.elapse_ms = num("Elapse Time(ms)", kAnyTime);
  rec.transit_ms = num("Transit Time(ms)", kAnyTime);
  rec.wait_ms = num("Wait Time(ms)", kAnyTime);
  rec.sync_ms = num("Synchronization Time(ms)", kAnyTime);
  rec.idle_ms = num("Idle Time(ms)", kAnyTime);
  rec.wait_ratio = num("Wait Time Ratio", 1.0);
  rec.sync_ratio = num("Synchronization Time Ratio", 1.0);
}

}  // namespace

void read_step_trace_csv(const std::string& path, const std::string& producer, TraceSet& set) {
  std::ifstream in(path);
  if (!in) throw TraceError(fmt::format("{}: cannot open file", path));
  std::string line;
  if (!std::getline(in, line)) throw TraceError(fmt::format("{}: line 1: empty; expected a header", path));
  auto header = split_csv(line);
  if (header.empty() || header[0] != "Step") {
    throw TraceError(fmt::format("{}: line 1: first column '{}'; expected the step_trace_time.csv "
                                 "header starting with \"Step\"",
                                 path, header.empty() ? "" : header[0]));
  }
  size_t lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    auto fields = split_csv(line);
    if (fields.size() != header.size()) {
      throw TraceError(fmt::format("{}: line {}: {} fields; expected {} as in the header", path,
                                   lineno, fields.size(), header.size()));
    }
    StepTraceRow row;
    row.source = path;
    row.producer = producer;
    for (size_t i = 0; i < header.size(); ++i) {
      const auto& col = header[i];
      const auto& val = fields[i];
      if (col == "Step") {
        if (!val.empty()) {
          auto v = to_double(val);
          if (!v || !(std::fabs(*v) <= 9.0e15) || *v != std::floor(*v)) {  // exact in a double; no UB in the cast
            throw TraceError(fmt::format("{}: line {}: Step '{}'; expected an integer", path,
                                         lineno, val));
          }
          row.step = static_cast<int64_t>(*v);
        }
      } else if (col == "Type") {
        row.type = val;
      } else if (col == "Index") {
        row.index = val;
      } else {
        auto v = to_double(val);
        if ((!v && !val.empty()) || (v && !(std::isfinite(*v) && *v >= 0))) {  // durations: finite, >= 0
          throw TraceError(fmt::format("{}: line {}: column '{}' = '{}'; expected a number >= 0 (µs)",
                                       path, lineno, col, val));
        }
        if (v) row.values.emplace_back(col, *v);
      }
    }
    set.step_trace.push_back(std::move(row));
  }
  set.sources.push_back(path);
}


void read_communication_json(const std::string& path, TraceSet& set) {
  nlohmann::json j = parse_json_file(path);
  try {
    for (auto& [k1, v1] : j.items()) {
      bool cluster = !k1.empty() && k1.front() == '(';
      for (auto& [k2, v2] : v1.items()) {
        for (auto& [k3, v3] : v2.items()) {
          if (cluster) {  // group → step → op → rank → info
            for (auto& [k4, v4] : v3.items()) {
              CommOpRecord rec{.source = path, .group = k1, .step = k2, .op = k3, .rank = k4};
              read_comm_info(v4, rec);
              set.comm_ops.push_back(std::move(rec));
            }
          } else {  // step → collective|p2p → op → info
            CommOpRecord rec{.source = path, .group = k2, .step = k1, .op = k3, .rank = ""};
            if (k3 == "Total Op Info") continue;
            read_comm_info(v3, rec);
            set.comm_ops.push_back(std::move(rec));
          }
        }
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw TraceError(fmt::format("{}: unexpected structure ({}); expected group/step/op/rank → "
                                 "\"Communication Time Info\" objects",
                                 path, without_json_id(e.what())));
  }
  set.sources.push_back(path);
}

void read_communication_matrix(const std::string& path, std::optional<Rank> rank, TraceSet& set) {
  nlohmann::json j = parse_json_file(path);
  try {
    for (auto& [step, kinds] : j.items()) {
      for (auto& [kind, ops] : kinds.items()) {
        for (auto& [op, links] : ops.items()) {
          if (op == "Total Op Info") continue;
          for (auto& [link, info] : links.items()) {
            CommLinkRecord rec;
            rec.source = path;
            rec.rank = rank ? std::to_string(rank->v) : "";
            rec.step = step;
            rec.kind = kind;
            rec.op = op;
            const auto dash = link.find('-');
            const auto src = dash == std::string::npos ? std::nullopt : to_int(link.substr(0, dash));
            const auto dst = dash == std::string::npos ? std::nullopt : to_int(link.substr(dash + 1));
            if (!src || !dst) {
              throw TraceError(fmt::format("{}: {} → {} → {}: link '{}'; expected \"src-dst\" ranks", path, step,
                                           kind, op, link));
            }
            rec.src = *src;
            rec.dst = *dst;
            rec.transport = info.value("Transport Type", "");
            rec.size_mb = info.value("Transit Size(MB)", 0.0);
            rec.time_ms = info.value("Transit Time(ms)", 0.0);
            rec.bandwidth_gbps = info.value("Bandwidth(GB/s)", 0.0);
            set.comm_links.push_back(std::move(rec));
          }
        }
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw TraceError(fmt::format("{}: unexpected structure ({}); expected step → p2p|collective → op → "
                                 "\"src-dst\" → link objects",
                                 path, without_json_id(e.what())));
  }
  set.sources.push_back(path);
}

void read_ascend_dir(const std::string& dir, TraceSet& set) {
  fs::path root(dir);
  std::string name = root.filename().string();
  std::string producer = ends_with(name, "_ascend_pt")   ? "torch_npu"
                         : ends_with(name, "_ascend_ms") ? "MindSpore"
                                                         : "unknown";
  // profiler_info_<rank>.json; MindSpore on CPU writes none, its FRAMEWORK/cpu_framework_<rank>.txt names the rank.
  static const std::regex kInfo(R"(profiler_info_(\d+)\.json)");
  static const std::regex kFramework(R"(cpu_framework_(\d+)\.txt)");
  std::optional<Rank> rank = rank_from_file_name(root, kInfo);
  if (!rank && fs::is_directory(root / "FRAMEWORK")) rank = rank_from_file_name(root / "FRAMEWORK", kFramework);
  fs::path out = root / "ASCEND_PROFILER_OUTPUT";
  if (!fs::is_directory(out)) {
    throw TraceError(fmt::format("{}: no ASCEND_PROFILER_OUTPUT directory; expected an Ascend "
                                 "profiler output directory",
                                 dir));
  }
  fs::path tv = out / "trace_view.json";
  if (!fs::exists(tv) && fs::exists(out / "trace_view.json.gz")) tv = out / "trace_view.json.gz";
  const bool summary = !fs::exists(out / "step_trace_time.csv") && !fs::exists(out / "communication.json");
  if (fs::exists(tv)) {
    if (!rank) {
      set.notes.push_back(fmt::format("{}: no profiler_info_<rank>.json; rank taken from the trace or 0", dir));
    }
    detail::read_chrome_file(tv.string(), set, detail::ChromeReadOptions{rank});
  } else if (summary) {
    throw TraceError(fmt::format("{}: no trace_view.json, step_trace_time.csv or communication.json; expected "
                                 "an Ascend profiler output directory",
                                 out.string()));
  } else {
    set.notes.push_back(fmt::format("{}: summary only (no trace_view.json): the producer's step-trace and "
                                    "communication figures are reported; timeline figures (overlap, waits, "
                                    "chains) need the timeline",
                                    dir));
  }
  if (fs::exists(out / "step_trace_time.csv")) {
    read_step_trace_csv((out / "step_trace_time.csv").string(), producer, set);
    if (rank) {
      for (auto& row : set.step_trace) {
        if (row.source == (out / "step_trace_time.csv").string() && row.index.empty()) {
          row.type = "rank";
          row.index = std::to_string(rank->v);
        }
      }
    }
  }
  if (fs::exists(out / "communication.json")) {
    const size_t before = set.comm_ops.size();
    read_communication_json((out / "communication.json").string(), set);
    for (size_t i = before; i < set.comm_ops.size(); ++i) {
      if (set.comm_ops[i].rank.empty() && rank) set.comm_ops[i].rank = std::to_string(rank->v);
      if (rank) join_lane_op(set, *rank, set.comm_ops[i]);
    }
  }
  // torch_npu writes profiler_metadata.json beside ASCEND_PROFILER_OUTPUT, MindSpore in the
  // *_ascend_ms directory itself: the same place.
  if (fs::exists(root / "profiler_metadata.json")) read_profiler_metadata((root / "profiler_metadata.json").string(), set);
  if (fs::exists(out / "communication_matrix.json")) {
    read_communication_matrix((out / "communication_matrix.json").string(), rank, set);
  }
}

}  // namespace ppstream::analyze
