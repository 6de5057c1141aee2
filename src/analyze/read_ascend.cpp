// Ascend profiler outputs besides trace_view.json: the profiler directory layout,
// step_trace_time.csv and communication.json (per-rank and cluster forms).
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "chrome_reader.h"
#include "json_input.h"
#include "ppstream/analyze/readers.h"

namespace ppstream::analyze {
namespace fs = std::filesystem;
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

void read_comm_info(const nlohmann::json& info, CommOpRecord& rec) {
  const auto& t = info.at("Communication Time Info");
  auto num = [&](const char* key) { return t.contains(key) ? t.at(key).get<double>() : 0.0; };
  rec.elapse_ms = num("Elapse Time(ms)");
  rec.transit_ms = num("Transit Time(ms)");
  rec.wait_ms = num("Wait Time(ms)");
  rec.sync_ms = num("Synchronization Time(ms)");
  rec.idle_ms = num("Idle Time(ms)");
  rec.wait_ratio = num("Wait Time Ratio");
  rec.sync_ratio = num("Synchronization Time Ratio");
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
          if (!v) {
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

// nlohmann's what() without its "[json.exception.parse_error.101] " id (our errors say it).
static std::string without_json_id(const char* what) {
  std::string w = what;
  if (const auto close = w.find("] "); w.rfind("[json.exception.", 0) == 0 && close != std::string::npos) w.erase(0, close + 2);
  return w;
}

void read_communication_json(const std::string& path, TraceSet& set) {
  std::ifstream in(path);
  if (!in) throw TraceError(fmt::format("{}: cannot open file", path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw TraceError(fmt::format("{}: byte {}: malformed JSON: {}", path, e.byte, without_json_id(e.what())));
  }
  try {
    for (auto& [k1, v1] : j.items()) {
      bool cluster = !k1.empty() && k1.front() == '(';
      for (auto& [k2, v2] : v1.items()) {
        for (auto& [k3, v3] : v2.items()) {
          if (cluster) {  // group → step → op → rank → info
            for (auto& [k4, v4] : v3.items()) {
              CommOpRecord rec{path, k1, k2, k3, k4};
              read_comm_info(v4, rec);
              set.comm_ops.push_back(std::move(rec));
            }
          } else {  // step → collective|p2p → op → info
            CommOpRecord rec{path, k2, k1, k3, ""};
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

void read_ascend_dir(const std::string& dir, TraceSet& set) {
  fs::path root(dir);
  std::string name = root.filename().string();
  std::string producer = ends_with(name, "_ascend_pt")   ? "torch_npu"
                         : ends_with(name, "_ascend_ms") ? "MindSpore"
                                                         : "unknown";
  std::optional<Rank> rank;
  static const std::regex kInfo(R"(profiler_info_(\d+)\.json)");
  for (const auto& e : fs::directory_iterator(root)) {
    std::smatch m;
    std::string fname = e.path().filename().string();
    if (std::regex_match(fname, m, kInfo)) {  // checked: a bare stoi would throw "stoi" on 99999999999
      int32_t r = 0;
      const std::string digits = m[1].str();
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), r);
      if (ec != std::errc() || end != digits.data() + digits.size())
        throw TraceError(fmt::format("{}: rank {} in the file name is out of range (0..2147483647)",
                                     e.path().string(), digits));
      rank = Rank(r);
    }
  }
  fs::path out = root / "ASCEND_PROFILER_OUTPUT";
  if (!fs::is_directory(out)) {
    throw TraceError(fmt::format("{}: no ASCEND_PROFILER_OUTPUT directory; expected an Ascend "
                                 "profiler output directory",
                                 dir));
  }
  fs::path tv = out / "trace_view.json";
  if (!fs::exists(tv)) throw TraceError(fmt::format("{}: missing; expected the Ascend timeline", tv.string()));
  auto buf = detail::load_file(tv.string());
  if (!rank) {
    set.notes.push_back(fmt::format("{}: no profiler_info_<rank>.json; rank taken from the trace "
                                    "or 0",
                                    dir));
  }
  detail::read_chrome_buffer(tv.string(), buf, set, detail::ChromeReadOptions{rank});
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
  if (fs::exists(out / "communication.json")) read_communication_json((out / "communication.json").string(), set);
}

}  // namespace ppstream::analyze
