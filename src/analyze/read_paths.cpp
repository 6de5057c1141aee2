// Decides the format of each input path and hands it to its reader.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "chrome_reader.h"
#include "json_input.h"
#include "json_stream.h"
#include "ppstream/analyze/readers.h"
#include "run_dir.h"

namespace ppstream::analyze {
namespace fs = std::filesystem;
using detail::ends_with;

namespace {

enum class JsonKind { CHROME, CLUSTER_COMM, RANK_COMM };

// Looks at the first bytes only: '[' or a first key other than "(…)" / "step…" is a Chrome
// trace (its scanner checks for "traceEvents"); "(0, 1)" keys a cluster communication.json;
// "step…" keys a per-rank communication.json.
JsonKind sniff_json(const std::string& path) {
  detail::ByteSource src(path);
  detail::JsonCursor cur(src);
  cur.skip_ws();
  const int c = cur.peek();
  if (c == '[') return JsonKind::CHROME;
  if (c != '{') throw TraceError(fmt::format("{}: byte {}: expected a JSON object or array", path, cur.offset()));
  cur.advance();
  cur.skip_ws();
  if (cur.peek() != '"') return JsonKind::CHROME;  // "{}" or malformed: the Chrome scanner names what is wrong
  std::string first;
  try {
    first = cur.take_string();
  } catch (const detail::JsonCut& cut) {
    throw TraceError(detail::truncation_message(path, cut.end_offset, 0));
  }
  if (!first.empty() && first.front() == '(') return JsonKind::CLUSTER_COMM;
  if (first.rfind("step", 0) == 0) return JsonKind::RANK_COMM;
  return JsonKind::CHROME;
}

bool is_ascend_dir(const fs::path& p) {
  std::string name = p.filename().string();
  return ends_with(name, "_ascend_pt") || ends_with(name, "_ascend_ms") ||
         fs::is_directory(p / "ASCEND_PROFILER_OUTPUT");
}

void read_one(const fs::path& p, TraceSet& set) {
  std::string path = p.string();
  if (fs::is_directory(p)) {
    if (is_ascend_dir(p)) {
      read_ascend_dir(path, set);
      return;
    }
    if (detail::is_train_run_dir(p)) {
      detail::read_train_run_dir(p, set);
      return;
    }
    std::vector<fs::path> entries;
    for (const auto& e : fs::directory_iterator(p)) entries.push_back(e.path());
    std::sort(entries.begin(), entries.end());
    size_t used = 0;
    for (const auto& e : entries) {
      std::string n = e.filename().string();
      if (fs::is_directory(e) ? is_ascend_dir(e)
                              : (ends_with(n, ".json") || ends_with(n, ".json.gz") ||
                                 ends_with(n, ".csv"))) {
        read_one(e, set);
        ++used;
      }
    }
    if (used == 0) {
      throw TraceError(fmt::format("{}: directory holds no trace (expected *.json, *.json.gz, "
                                   "*.csv or *_ascend_pt/*_ascend_ms directories; a train run directory holds run.json "
                                   "and programs.json)",
                                   path));
    }
    return;
  }
  if (!fs::exists(p)) throw TraceError(fmt::format("{}: no such file or directory", path));
  if (ends_with(path, ".csv")) {
    read_step_trace_csv(path, "unknown", set);
    return;
  }
  read_chrome_trace(path, set);
}

}  // namespace

void read_chrome_trace(const std::string& path, TraceSet& set) {
  switch (sniff_json(path)) {
    case JsonKind::CHROME: detail::read_chrome_file(path, set, {}); break;
    case JsonKind::CLUSTER_COMM:
    case JsonKind::RANK_COMM: read_communication_json(path, set); break;
  }
}

void read_paths(const std::vector<std::string>& paths, TraceSet& set) {
  if (paths.empty()) throw TraceError("analyze: no input path given");
  for (const auto& p : paths) read_one(fs::path(p), set);
  resolve_comm_links(set);
  if (set.ranks.empty() && set.step_trace.empty() && set.comm_ops.empty()) {
    throw TraceError(fmt::format("{}: no device lanes, step-trace rows or communication ops found",
                                 paths.front()));
  }
}

}  // namespace ppstream::analyze
