// Fuzz target bodies and the property checks (see targets.h).
#include "targets.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <zlib.h>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/megatron.h"
#include "ppstream/analyze/readers.h"
#include "ppstream/analyze/timeline.h"
#include "ppstream/config/config.h"
#include "ppstream/program/format.h"
#include "ppstream/verify/verify.h"

namespace ppstream::fuzz {
namespace {

namespace fs = std::filesystem;
using Check = std::optional<std::string>;

// A per-process scratch directory for readers that take paths; removed at exit.
struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("ppstream-fuzz-" + std::to_string(::getpid()));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  fs::path write(const std::string& rel, std::string_view data) const {
    const fs::path p = dir / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
    return p;
  }
  void clear() const {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) fs::remove_all(e.path(), ec);
  }
};
const Scratch& scratch() {
  static const Scratch s;
  return s;
}

// The error must name the input (`where`: file name, origin or key prefix) and carry no
// library message ids, unless the input itself holds them (messages quote the input).
// A CSV message quotes the field as the reader sees it (no quotes, no carriage returns), so the
// input is also compared in that form.
Check located(const std::exception& e, const std::string& where, std::string_view input) {
  const std::string msg = e.what();
  if (msg.find(where) == std::string::npos) return "error does not name '" + where + "': " + msg;
  std::string as_csv_field(input);
  std::erase_if(as_csv_field, [](char c) { return c == '"' || c == '\r'; });
  for (const char* lib : {"[json.exception.", "yaml-cpp: error"})
    if (msg.find(lib) != std::string::npos && input.find(lib) == std::string_view::npos &&
        as_csv_field.find(lib) == std::string::npos)
      return "library exception text leaked: " + msg;
  return std::nullopt;
}

// Every number in a result: finite; non-negative unless signed by definition (diff changes);
// keys holding "ratio" within [0, 1].
Check check_numbers(const nlohmann::json& j, const std::string& key) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items())
      if (auto c = check_numbers(v, k)) return c;
  } else if (j.is_array()) {
    for (const auto& v : j)
      if (auto c = check_numbers(v, key)) return c;
  } else if (j.is_number()) {
    const double x = j.get<double>();
    if (!std::isfinite(x)) return key + " is not finite";
    if (key.find("ratio") != std::string::npos && (x < 0 || x > 1)) return key + "=" + std::to_string(x) + " outside [0, 1]";
    if (key.ends_with("_ms") && x < 0) return key + "=" + std::to_string(x) + " is negative";
  }
  return std::nullopt;
}

template <class F>
Check guarded(const std::string& where, std::string_view input, F&& body) {
  try {
    return body();
  } catch (const ConfigError& e) {
    return located(e, where, input);
  } catch (const ParseError& e) {
    return located(e, where, input);
  } catch (const analyze::TraceError& e) {
    return located(e, where, input);
  } catch (const std::exception& e) {
    return std::string("unexpected exception (not a located reader error): ") + e.what();
  }
}

Check config_yaml(std::string_view data) {
  return guarded("t.yaml", data, [&]() -> Check {
    load_config_text(std::string(data), "t.yaml");
    return std::nullopt;
  });
}

// "key=value" lines applied together to a small valid config, as the CLI's --set.
Check set_override(std::string_view data) {
  std::vector<std::pair<std::string, std::string>> kv;
  std::string text(data);
  size_t pos = 0;
  while (pos <= text.size() && kv.size() < 16) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(pos, nl - pos);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) kv.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    pos = nl + 1;
  }
  if (kv.empty()) return std::nullopt;
  return guarded("config: ", data, [&]() -> Check {
    PipelineConfig cfg = load_config_text("pipeline_parallel_size: 2\nmicro_batch_num: 4\nnum_layers: 4\n", "base.yaml");
    apply_overrides(cfg, kv);
    return std::nullopt;
  });
}

// Verify only what parses, and only sets small enough for the fuzzer's time limit.
void verify_small(const ProgramSet& set) {
  size_t n = 0;
  for (const Program& p : set.programs) n += p.instrs.size();
  if (n <= 20000) verify(set, VerifyOptions{{PlatformKind::STRICT, PlatformKind::CPU_SERIAL}, "", true});
}

Check program_text(std::string_view data) {
  return guarded("p.txt", data, [&]() -> Check {
    verify_small(parse_program_set(std::string(data), "p.txt"));
    return std::nullopt;
  });
}

Check program_json(std::string_view data) {
  return guarded("p.json", data, [&]() -> Check {
    verify_small(parse_json(std::string(data), "p.json"));
    return std::nullopt;
  });
}

// Moves rank `tl`'s clock by `d` ns (its base time, when it has one, by −d: the same moments
// written on a clock with another origin); false when a time would leave the readers' bounds.
bool shift_clock(analyze::RankTimeline& tl, int64_t d) {
  const auto in_bounds = [d](int64_t t) { return t + d <= analyze::kMaxAbsTsNs && t + d >= -analyze::kMaxAbsTsNs; };
  for (const auto& s : tl.slices)
    if (!in_bounds(s.start_ns) || !in_bounds(s.end_ns()) || (s.launch_ns && !in_bounds(*s.launch_ns))) return false;
  for (const auto& m : tl.steps)
    if (!in_bounds(m.start_ns) || !in_bounds(m.end_ns)) return false;
  if (tl.base_ns && *tl.base_ns < d) return false;
  for (auto& s : tl.slices) {
    s.start_ns += d;
    if (s.launch_ns) *s.launch_ns += d;
  }
  for (auto& m : tl.steps) m.start_ns += d, m.end_ns += d;
  for (auto& w : tl.wait_sources)
    if (w.record_ns) *w.record_ns += d;
  if (tl.base_ns) *tl.base_ns -= d;
  return true;
}

// Properties of every analysis: its numbers (check_numbers), and, for ranks on their own clocks,
// that shifting one rank's clock changes no figure (docs/analyze.md "Positions"): the report of
// the set with its last rank's clock 4 s ahead is the same text.
Check analyze_file(const fs::path& path, const std::string& where, std::string_view input) {
  return guarded(where, input, [&]() -> Check {
    analyze::TraceSet set;
    analyze::read_paths({path.string()}, set);
    const analyze::AnalysisResult r = analyze::analyze(set);
    const std::string json = r.to_json();
    if (auto c = check_numbers(nlohmann::json::parse(json), "")) return c;
    constexpr int64_t kShiftNs = int64_t{4'000'000'000};
    if (set.global_clock || set.ranks.size() < 2 || !shift_clock(set.ranks.back(), kShiftNs)) return std::nullopt;
    if (analyze::analyze(set).to_json() != json)
      return "shifting rank " + std::to_string(set.ranks.back().rank.v) + "'s clock by 4 s changed the report";
    return std::nullopt;
  });
}

std::string gzip(std::string_view data) {
  uLongf n = compressBound(static_cast<uLong>(data.size())) + 32;
  std::string out(n, '\0');
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// The Megatron timer reader with the flat-event reader and with the full parse only: the same
// error text, or the same ops, notes and declared workers (docs/whatif.md "Benchmark").
Check timer_readers_agree(const fs::path& path) {
  const auto read = [&](bool flat) {
    std::string out;
    try {
      analyze::TimerTrace t;
      analyze::read_timer_trace(path.string(), t, flat);
      for (const auto& op : t.ops) {
        out += std::to_string(op.start_ns) + ' ' + std::to_string(op.dur_ns) + ' ' + std::to_string(op.offset) + ' ' +
               std::to_string(op.step) + ' ' + std::to_string(op.dp_rank) + ' ' + std::to_string(op.pp_rank) + ' ' +
               std::to_string(op.tp_rank) + ' ' + std::to_string(op.chunk) + ' ' + std::to_string(op.mb) + ' ' +
               std::to_string(op.seq) + ' ' + std::to_string(op.tid) + ' ' + t.strings.str(op.name) + ' ' +
               analyze::to_string(op.lane) + '\n';
      }
      for (const auto& n : t.notes) out += n + '\n';
      for (const auto& [w, f] : t.declared_workers) out += std::to_string(w.first) + ',' + std::to_string(w.second) + '\n';
    } catch (const analyze::TraceError& e) {
      out = std::string("error: ") + e.what();
    }
    return out;
  };
  const std::string flat = read(true), full = read(false);
  if (flat == full) return std::nullopt;
  return "the flat-event reader and the full parse disagree on the timer ops:\n--- flat\n" + flat.substr(0, 2000) +
         "\n--- full\n" + full.substr(0, 2000);
}

// Chrome-trace JSON: Kineto, Ascend trace_view, ppstream's own trace and Megatron timelines share
// this reader.
Check chrome_json(std::string_view data) {
  scratch().clear();
  const fs::path path = scratch().write("trace.json", data);
  if (auto c = analyze_file(path, "trace.json", data)) return c;
  return guarded("trace.json", data, [&] { return timer_readers_agree(path); });
}

// The first byte chooses: the data gzipped by us (reaches the JSON reader) or raw bytes as .gz.
Check chrome_json_gz(std::string_view data) {
  if (data.empty()) return std::nullopt;
  scratch().clear();
  const bool raw = data[0] & 1;
  data.remove_prefix(1);
  return analyze_file(scratch().write("trace.json.gz", raw ? std::string(data) : gzip(data)), "trace.json.gz", data);
}

Check csv(std::string_view data) {
  scratch().clear();
  return analyze_file(scratch().write("step_trace_time.csv", data), "step_trace_time.csv", data);
}

// An Ascend profiler directory; the input holds its files separated by "\n@@@@\n":
// profiler_info_0.json, trace_view.json, communication.json, communication_matrix.json,
// step_trace_time.csv (missing parts: no such file).
Check ascend_dir(std::string_view data) {
  const std::string_view whole = data;
  static const char* kFiles[] = {"profiler_info_0.json", "ASCEND_PROFILER_OUTPUT/trace_view.json",
                                 "ASCEND_PROFILER_OUTPUT/communication.json",
                                 "ASCEND_PROFILER_OUTPUT/communication_matrix.json",
                                 "ASCEND_PROFILER_OUTPUT/step_trace_time.csv"};
  scratch().clear();
  const std::string root = "x_ascend_pt";
  fs::create_directories(scratch().dir / root / "ASCEND_PROFILER_OUTPUT");
  for (const char* f : kFiles) {
    const size_t sep = data.find("\n@@@@\n");
    scratch().write(root + "/" + f, data.substr(0, sep));
    if (sep == std::string_view::npos) break;
    data.remove_prefix(sep + 6);
  }
  return analyze_file(scratch().dir / root, root, whole);
}

}  // namespace

const std::vector<std::string>& target_names() {
  static const std::vector<std::string> names = {"config_yaml", "set_override", "program_text", "program_json",
                                                 "chrome_json", "chrome_json_gz", "ascend_dir",   "csv"};
  return names;
}

std::optional<std::string> run_target(std::string_view target, std::string_view data) {
  if (target == "config_yaml") return config_yaml(data);
  if (target == "set_override") return set_override(data);
  if (target == "program_text") return program_text(data);
  if (target == "program_json") return program_json(data);
  if (target == "chrome_json") return chrome_json(data);
  if (target == "chrome_json_gz") return chrome_json_gz(data);
  if (target == "ascend_dir") return ascend_dir(data);
  if (target == "csv") return csv(data);
  throw std::invalid_argument("unknown fuzz target " + std::string(target));
}

}  // namespace ppstream::fuzz
