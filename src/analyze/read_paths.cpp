// Decides the format of each input path and hands it to its reader.
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include "chrome_reader.h"
#include "json_input.h"
#include "json_stream.h"
#include "read_parallel.h"
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
  detail::JsonCursor cur(src, 4096);  // the first key is all it needs
  if (!cur.skip_bom()) return JsonKind::CHROME;  // the Chrome scanner names the byte
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

// One input after directories are expanded, in reading order. An input that cannot be read
// (missing path, directory without traces) is an error thrown when its turn comes, so the first
// error is the same as when reading path after path.
struct Input {
  enum Kind { ASCEND_DIR, TRAIN_RUN_DIR, CSV, JSON, ERROR } kind;
  std::string path;  // ERROR: the message
};

void expand(const fs::path& p, std::vector<Input>& out) {
  std::string path = p.string();
  if (fs::is_directory(p)) {
    if (is_ascend_dir(p)) {
      out.push_back({Input::ASCEND_DIR, path});
      return;
    }
    if (detail::is_train_run_dir(p)) {
      out.push_back({Input::TRAIN_RUN_DIR, path});
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
        expand(e, out);
        ++used;
      }
    }
    if (used == 0) {
      out.push_back({Input::ERROR, fmt::format("{}: directory holds no trace (expected *.json, *.json.gz, "
                                               "*.csv or *_ascend_pt/*_ascend_ms directories; a train run directory "
                                               "holds run.json and programs.json)",
                                               path)});
    }
    return;
  }
  if (!fs::exists(p)) out.push_back({Input::ERROR, fmt::format("{}: no such file or directory", path)});
  else out.push_back({ends_with(path, ".csv") ? Input::CSV : Input::JSON, path});
}

// Reads the inputs in order; each run of consecutive JSON files goes to the parallel reader (with
// `digester` when given).
void read_inputs(const std::vector<Input>& inputs, TraceSet& set, unsigned threads, detail::FileDigester* digester,
                 std::vector<detail::RankDigest>* digests) {
  for (size_t i = 0; i < inputs.size();) {
    const Input& in = inputs[i];
    if (in.kind == Input::JSON) {
      std::vector<std::string> run;
      for (; i < inputs.size() && inputs[i].kind == Input::JSON; ++i) run.push_back(inputs[i].path);
      detail::read_chrome_files(run, set, threads, digester, digests);
      continue;
    }
    switch (in.kind) {
      case Input::ASCEND_DIR: read_ascend_dir(in.path, set); break;
      case Input::TRAIN_RUN_DIR: detail::read_train_run_dir(in.path, set); break;
      case Input::CSV: read_step_trace_csv(in.path, "unknown", set); break;
      case Input::ERROR: throw TraceError(in.path);
      case Input::JSON: break;
    }
    ++i;
  }
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
  read_paths(paths, set, detail::reader_threads());
}

namespace {

// Reads `paths` into `set` (read_paths), the JSON runs through `digester` unless an input is a
// directory whose joins edit slices after the last file. Returns whether the digester was used.
bool read_all(const std::vector<std::string>& paths, TraceSet& set, unsigned threads, detail::FileDigester* digester,
              std::vector<detail::RankDigest>* digests) {
  if (paths.empty()) throw TraceError("analyze: no input path given");
  std::vector<Input> inputs;
  for (const auto& p : paths) expand(fs::path(p), inputs);
  if (std::any_of(inputs.begin(), inputs.end(),
                  [](const Input& in) { return in.kind == Input::ASCEND_DIR || in.kind == Input::TRAIN_RUN_DIR; })) {
    digester = nullptr;
  }
  read_inputs(inputs, set, threads, digester, digests);
  resolve_comm_links(set);
  if (set.ranks.empty() && set.step_trace.empty() && set.comm_ops.empty()) {
    throw TraceError(fmt::format("{}: no device lanes, step-trace rows or communication ops found",
                                 paths.front()));
  }
  return digester != nullptr;
}

}  // namespace

void read_paths(const std::vector<std::string>& paths, TraceSet& set, unsigned threads) {
  read_all(paths, set, threads, nullptr, nullptr);
}

namespace detail {

bool read_paths_digested(const std::vector<std::string>& paths, TraceSet& set, unsigned threads,
                         FileDigester& digester, std::vector<RankDigest>& digests) {
  return read_all(paths, set, threads, &digester, &digests);
}

}  // namespace detail

}  // namespace ppstream::analyze

namespace ppstream::analyze {

std::optional<std::string> input_named_by(const std::string& out, const std::vector<std::string>& inputs) {
  struct stat o {};
  if (out.empty() || ::stat(out.c_str(), &o) != 0) return std::nullopt;
  for (const std::string& in : inputs) {
    struct stat st {};
    if (!in.empty() && ::stat(in.c_str(), &st) == 0 && st.st_dev == o.st_dev && st.st_ino == o.st_ino) return in;
  }
  return std::nullopt;
}

namespace {

// The spelling of the file a path that does not exist names: the end of its chain of dangling
// symbolic links (a write through one creates the file it points at; 40 links at most, as the
// kernel follows), weakly canonical.
std::string missing_file_spelling(const std::string& p) {
  fs::path at(p);
  std::error_code ec;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(at, ec)); ++hops) {
    const fs::path to = fs::read_symlink(at, ec);
    if (ec) break;
    at = to.is_absolute() ? to : at.parent_path() / to;
  }
  const fs::path canon = fs::weakly_canonical(at, ec);
  return ec ? at.string() : canon.string();
}

// The first (earlier, later) indices of `paths` that are one file: device and inode for the paths
// that exist, missing_file_spelling for the others.
std::optional<std::pair<size_t, size_t>> same_file_pair(const std::vector<std::string>& paths) {
  std::map<std::pair<uint64_t, uint64_t>, size_t> files;  // (st_dev, st_ino) of the paths that exist
  std::map<std::string, size_t> missing;                  // weakly canonical spelling of the others
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& p = paths[i];
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) {
      const auto [at, fresh] = files.try_emplace({static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)}, i);
      if (!fresh) return std::pair{at->second, i};
      continue;
    }
    const auto [at, fresh] = missing.try_emplace(missing_file_spelling(p), i);
    if (!fresh) return std::pair{at->second, i};
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> repeated_path(const std::vector<std::string>& paths) {
  const auto pair = same_file_pair(paths);
  if (!pair) return std::nullopt;
  // The later path, and the earlier one when it is spelt otherwise (a link, ./a for a).
  const std::string& earlier = paths[pair->first];
  const std::string& later = paths[pair->second];
  return earlier == later ? later : fmt::format("{} (the same file as {})", later, earlier);
}

std::optional<std::string> same_output(const std::vector<std::pair<std::string, std::string>>& outs) {
  std::vector<std::string> paths;
  for (const auto& o : outs) paths.push_back(o.second);
  const auto pair = same_file_pair(paths);
  if (!pair) return std::nullopt;
  // "--svg P" for an option, "svg=P" for a Python keyword (as the input_named_by messages spell it).
  const auto named = [&](size_t i) {
    const auto& [what, path] = outs[i];
    return !what.empty() && what.back() == '=' ? what + path : what + " " + path;
  };
  return fmt::format("{} and {} are the same file", named(pair->first), named(pair->second));
}

}  // namespace ppstream::analyze
