// Reads a `ppstream train` run directory: its ranks' host traces (run_dir.h).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>

#include "json_file.h"
#include "ppstream/analyze/readers.h"
#include "run_dir.h"

namespace ppstream::analyze::detail {
namespace fs = std::filesystem;

namespace {

struct RunInfo {
  int64_t first = 0, last = 0;  // this node's ranks, inclusive
  bool profile = false;
};

RunInfo read_run_json(const fs::path& dir) {
  const std::string path = (dir / "run.json").string();
  const nlohmann::json j = parse_json_file(path);
  const auto bad = [&](const char* key, const char* expected) {
    return TraceError(fmt::format("{}: key \"{}\": expected {} (written by ppstream train)", path, key, expected));
  };
  if (!j.is_object()) throw TraceError(fmt::format("{}: expected a JSON object (written by ppstream train)", path));
  const auto ranks = j.find("ranks");
  if (ranks == j.end() || !ranks->is_array() || ranks->size() != 2 || !(*ranks)[0].is_number_integer() ||
      !(*ranks)[1].is_number_integer()) {
    throw bad("ranks", "[first, last], this node's ranks");
  }
  RunInfo info{(*ranks)[0].get<int64_t>(), (*ranks)[1].get<int64_t>(), false};
  if (info.first < 0 || info.last < info.first || info.last > INT32_MAX) throw bad("ranks", "0 <= first <= last");
  const auto profile = j.find("profile");
  if (profile == j.end() || !profile->is_boolean()) throw bad("profile", "true or false");
  info.profile = profile->get<bool>();
  return info;
}

// "rank12" → 12; nullopt for any other name.
std::optional<int64_t> rank_of_dir_name(const std::string& name) {
  if (name.size() <= 4 || name.compare(0, 4, "rank") != 0) return std::nullopt;
  int64_t r = 0;
  const char* end = name.data() + name.size();
  auto [p, ec] = std::from_chars(name.data() + 4, end, r);
  if (ec != std::errc() || p != end || r < 0) return std::nullopt;
  return r;
}

// A --profile run's profiler output sits in DIR/profile/ (one *_ascend_ms per rank), read on its
// own: the analyzer takes one trace per rank, and the host traces are this directory's.
void note_profile(const fs::path& dir, bool profiled, TraceSet& set) {
  const fs::path prof = dir / "profile";
  const bool present = fs::is_directory(prof) && !fs::is_empty(prof);
  if (profiled && present) {
    set.notes.push_back(fmt::format("{}: the run's profiler output, not read with the host traces (one trace per "
                                    "rank): analyze it as `ppstream analyze {}`",
                                    prof.string(), prof.string()));
  } else if (profiled) {
    set.notes.push_back(fmt::format("{}: run.json says profile: true but the directory holds no profiler output",
                                    prof.string()));
  } else if (present) {
    set.notes.push_back(fmt::format("{}: not read: run.json says profile: false (an earlier run's output?)",
                                    prof.string()));
  }
}

}  // namespace

bool is_train_run_dir(const fs::path& dir) {
  return fs::is_regular_file(dir / "run.json") && fs::is_regular_file(dir / "programs.json");
}

void read_train_run_dir(const fs::path& dir, TraceSet& set) {
  const RunInfo info = read_run_json(dir);
  for (int64_t r = info.first; r <= info.last; ++r) {
    const fs::path rank_dir = dir / fmt::format("rank{}", r);
    const fs::path trace = rank_dir / "trace.json";
    if (!fs::is_regular_file(trace)) {
      throw TraceError(fmt::format("{}: missing: rank {} of this run (run.json ranks [{}, {}]) wrote no host trace; "
                                   "the run failed or has not finished (see {})",
                                   trace.string(), r, info.first, info.last,
                                   (dir / "progress" / fmt::format("rank{}.txt", r)).string()));
    }
    read_chrome_trace(trace.string(), set);
  }
  note_profile(dir, info.profile, set);
  std::vector<std::string> others;
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto r = e.is_directory() ? rank_of_dir_name(e.path().filename().string()) : std::nullopt;
    if (r && (*r < info.first || *r > info.last)) others.push_back(e.path().filename().string());
  }
  std::sort(others.begin(), others.end());
  for (const auto& name : others) {
    set.notes.push_back(fmt::format("{}: not read: not a rank of this run (run.json ranks [{}, {}])",
                                    (dir / name).string(), info.first, info.last));
  }
}

}  // namespace ppstream::analyze::detail
