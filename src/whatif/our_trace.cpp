#include "our_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>

#include "ppstream/analyze/trace_format.h"
#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {
namespace tf = ppstream::analyze::trace_format;
namespace fs = std::filesystem;

namespace {

// `ppstream train --out DIR` (docs/runtime.md "Run directory"): the launcher writes both before
// any worker starts (the analyzer's rule too, src/analyze/read_run_dir.cpp; detect.cpp's too).
bool is_train_run_dir(const fs::path& dir) {
  return fs::is_regular_file(dir / "run.json") && fs::is_regular_file(dir / "programs.json");
}

}  // namespace

namespace {

struct Marker {
  int32_t step = 0;
  double start_ms = 0, end_ms = 0;
};

// One file's slices into `out` (steps by its markers; none: one step 0 from t = 0). `file_rank`:
// the rank a per-rank file (replay.POLICY.rankN.json, rank{r}/trace.json) is named for; every
// event of it must be that rank's (a copied or renamed file would otherwise stand for another).
void read_file(const std::string& path, std::optional<int32_t> file_rank, OurTrace& t, std::map<int32_t, OurStep>& out,
               std::map<int32_t, std::vector<int32_t>>& steps_of_rank) {
  std::ifstream f(path);
  if (!f) throw LiftError("whatif: cannot read " + path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw LiftError(fmt::format("whatif: {}: not JSON: {}", path, e.what()));
  }
  const auto meta = doc.find("otherData");
  if (meta == doc.end() || !meta->is_object() || !meta->contains(tf::kMetaKey))
    throw LiftError(fmt::format("whatif: {}: no otherData.ppstream: not ppstream's trace format", path));
  const nlohmann::json& ours = (*meta)[std::string(tf::kMetaKey)];
  if (!ours.is_object())
    throw LiftError(fmt::format("whatif: {}: otherData.ppstream is a {}, expected an object (version, producer, ranks)",
                                path, ours.type_name()));
  const auto producer = ours.find(std::string(tf::kMetaProducer));
  if (producer != ours.end() && !producer->is_string())
    throw LiftError(fmt::format("whatif: {}: otherData.ppstream.producer is a {}, expected a string", path,
                                producer->type_name()));
  t.producer = producer == ours.end() ? std::string() : producer->get<std::string>();
  // A later format must not be read as this one: an unknown version or clock is refused.
  const auto version = ours.find(std::string(tf::kMetaVersion));
  if (version != ours.end() && !(version->is_number_integer() && version->get<int64_t>() == tf::kVersion))
    throw LiftError(fmt::format("whatif: {}: otherData.ppstream.version is {}, expected {} (this reader's format)", path,
                                version->dump(), tf::kVersion));
  const auto clock = ours.find(std::string(tf::kMetaClock));
  if (clock != ours.end() && !(clock->is_string() && (*clock == "global" || *clock == "per_rank")))
    throw LiftError(fmt::format("whatif: {}: otherData.ppstream.clock is {}, expected \"global\" or \"per_rank\"",
                                path, clock->dump()));
  const auto ev = doc.find("traceEvents");
  if (ev == doc.end() || !ev->is_array()) throw LiftError(fmt::format("whatif: {}: no traceEvents array", path));
  struct Raw {
    size_t idx;
    int32_t rank;
    std::string name;
    OurSlice s;
  };
  std::vector<Raw> raws;
  std::map<int32_t, std::vector<Marker>> markers;
  size_t n = 0;
  for (const auto& e : *ev) {
    const size_t idx = n++;
    if (!e.is_object() || e.value("ph", std::string()) != "X") continue;
    const auto bad = [&](const std::string& what) {
      return LiftError(fmt::format("whatif: {}: traceEvents[{}]: {}", path, idx, what));
    };
    if (!e.contains("pid") || !e["pid"].is_number_integer() || !e.contains("ts") || !e["ts"].is_number() ||
        !e.contains("dur") || !e["dur"].is_number() || !e.contains("name") || !e["name"].is_string())
      throw bad("expected integer pid, numeric ts and dur, string name");
    const auto args = e.find("args");
    const bool has_args = args != e.end() && args->is_object();
    const std::string kind = has_args ? args->value(std::string(tf::kArgKind), std::string()) : "";
    // get<int32_t> would wrap a pid of 2^32 to rank 0: a rank is an int32 >= 0.
    const auto pid = e["pid"].get<int64_t>();
    if (pid < 0 || pid > std::numeric_limits<int32_t>::max())
      throw bad(fmt::format("pid {}: expected a rank, 0 .. {}", pid, std::numeric_limits<int32_t>::max()));
    const auto rank = static_cast<int32_t>(pid);
    if (file_rank && rank != *file_rank)
      throw bad(fmt::format("pid {}: an event of rank {} in the file of rank {} (a copied or renamed file?)", rank,
                            rank, *file_rank));
    const double start = e["ts"].get<double>() / 1000.0, end = start + e["dur"].get<double>() / 1000.0;
    if (!std::isfinite(start) || !std::isfinite(end) || !(e["dur"].get<double>() >= 0))
      throw bad(fmt::format("ts {} µs, dur {} µs: expected finite times and a duration >= 0", e["ts"].get<double>(),
                            e["dur"].get<double>()));
    if (kind == tf::kStepKind) {
      const auto step = args->find(std::string(tf::kArgStep));
      if (step == args->end() || !step->is_number_integer() || step->get<int64_t>() < 0 ||
          step->get<int64_t>() > std::numeric_limits<int32_t>::max())
        throw bad("a step marker without an integer args.step (0 .. 2^31 - 1)");
      markers[rank].push_back({static_cast<int32_t>(step->get<int64_t>()), start, end});
      continue;
    }
    if (kind == "stream_wait") {
      ++t.waits_skipped;
      continue;
    }
    if (kind != "compute" && kind != "p2p" && kind != "collective")
      throw bad(fmt::format("args.kind '{}': expected compute, p2p, collective, stream_wait, step", kind));
    OurSlice s;
    s.kind = kind;
    s.start_ms = start;
    s.end_ms = end;
    const auto arrival = args->find(std::string(tf::kArgArrivalDelay));
    if (arrival != args->end() && !arrival->is_number())
      throw bad(fmt::format("args.{} is a {}: expected the member's arrival delay in ms (a number)",
                            tf::kArgArrivalDelay, arrival->type_name()));
    s.arrival_ms = arrival == args->end() ? 0.0 : arrival->get<double>();
    if (!std::isfinite(s.arrival_ms) || s.arrival_ms < 0)
      throw bad(fmt::format("args.{} {}: expected a finite delay >= 0 ms", tf::kArgArrivalDelay, s.arrival_ms));
    raws.push_back({idx, rank, e["name"].get<std::string>(), s});
  }
  constexpr double kEps = 1e-6;  // ms: the trace's µs are written with 3 decimals
  for (auto& [rank, ms] : markers) {
    std::sort(ms.begin(), ms.end(), [](auto& a, auto& b) { return a.start_ms < b.start_ms; });
    for (size_t k = 1; k < ms.size(); ++k)
      if (ms[k].start_ms < ms[k - 1].end_ms - kEps)
        throw LiftError(fmt::format("whatif: {}: rank {}: step {} starts before step {} ends: steps must not overlap",
                                    path, rank, ms[k].step, ms[k - 1].step));
  }
  for (Raw& r : raws) {
    int32_t step = 0;
    double t0 = 0;
    const auto m = markers.find(r.rank);
    if (m != markers.end()) {
      const auto it = std::find_if(m->second.begin(), m->second.end(), [&](const Marker& k) {
        return r.s.start_ms >= k.start_ms - kEps && r.s.start_ms <= k.end_ms + kEps;
      });
      if (it == m->second.end())
        throw LiftError(fmt::format("whatif: {}: traceEvents[{}] '{}' (rank {}) lies in no step marker", path, r.idx,
                                    r.name, r.rank));
      step = it->step;
      t0 = it->start_ms;
    }
    OurStep& st = out[step];
    if (m != markers.end()) st.marker_abs_ms[r.rank] = t0;
    st.step = step;
    r.s.start_ms -= t0;
    r.s.end_ms -= t0;
    st.measured_ms = std::max(st.measured_ms, r.s.end_ms);
    st.slices[r.rank][r.name].push_back(r.s);
    ++t.slices_read;
  }
  for (const auto& [rank, ms] : markers) {
    auto& list = steps_of_rank[rank];
    for (const Marker& k : ms) {
      list.push_back(k.step);
      OurStep& st = out[k.step];
      st.step = k.step;
      st.measured_ms = std::max(st.measured_ms, k.end_ms - k.start_ms);
    }
  }
}

// A train run's host traces share one wall clock (the runtime's `clock: global`): every rank's
// slices are moved from its own marker start to the step's earliest one, so that times compare
// across ranks (a mirror's post, a collective's last arrival), and each rank's start is kept.
void common_step_origin(std::map<int32_t, OurStep>& steps) {
  for (auto& [k, st] : steps) {
    if (st.marker_abs_ms.empty()) continue;
    double first = st.marker_abs_ms.begin()->second;
    for (const auto& [rank, t0] : st.marker_abs_ms) first = std::min(first, t0);
    for (auto& [rank, row] : st.slices) {
      const auto it = st.marker_abs_ms.find(rank);
      const double shift = it == st.marker_abs_ms.end() ? 0.0 : it->second - first;
      st.rank_start_ms[rank] = shift;
      for (auto& [name, list] : row)
        for (OurSlice& s : list) s.start_ms += shift, s.end_ms += shift;
    }
    st.marker_abs_ms.clear();
  }
}

// A train run directory's host traces (rank{r}/trace.json of every rank), its config and programs.
std::vector<std::string> train_run_files(const fs::path& dir, OurTrace& t) {
  const std::string run_path = (dir / "run.json").string();
  std::ifstream f(run_path);
  nlohmann::json run;
  try {
    run = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw LiftError(fmt::format("whatif: {}: not JSON: {}", run_path, e.what()));
  }
  const auto key = [&](const char* k, const char* expected, auto check) {
    const auto it = run.is_object() ? run.find(k) : run.end();
    if (it == run.end() || !check(*it))
      throw LiftError(fmt::format("whatif: {}: key \"{}\": expected {} (written by ppstream train)", run_path, k, expected));
    return *it;
  };
  const auto is_int = [](const nlohmann::json& v) { return v.is_number_integer() && v.get<int64_t>() >= 0; };
  const auto is_str = [](const nlohmann::json& v) { return v.is_string(); };
  const auto world = key("world_size", "the number of ranks", is_int).get<int64_t>();
  const nlohmann::json ranks = key("ranks", "[first, last], this node's ranks", [&](const nlohmann::json& v) {
    return v.is_array() && v.size() == 2 && is_int(v[0]) && is_int(v[1]);
  });
  const auto device = key("device", "\"cpu\" or \"ascend\"", is_str).get<std::string>();
  t.platform = key("verified_under", "the engine profile the programs ran as", is_str).get<std::string>();
  if (ranks[0].get<int64_t>() != 0 || ranks[1].get<int64_t>() != world - 1)
    throw LiftError(fmt::format("whatif: {}: this node ran ranks {}..{} of {}; the what-if needs every rank's host "
                                "trace (every collective member): put the other nodes' rank{{r}}/ directories into one "
                                "run directory and set \"ranks\": [0, {}]",
                                run_path, ranks[0].get<int64_t>(), ranks[1].get<int64_t>(), world, world - 1));
  if (device != "cpu")
    throw LiftError(fmt::format("whatif: {}: a run on device '{}': its host traces hold host issue times, not the "
                                "device's (docs/whatif.md \"Train run directories\"); lift a CPU run, where every "
                                "call is synchronous and the host trace is the device's timeline",
                                run_path, device));
  t.config_path = (dir / "config.yaml").string();
  t.programs_path = (dir / "programs.json").string();
  std::vector<std::string> files;
  for (int64_t r = 0; r < world; ++r) {
    const fs::path trace = dir / fmt::format("rank{}", r) / "trace.json";
    if (!fs::is_regular_file(trace))
      throw LiftError(fmt::format("whatif: {}: no host trace of rank {} (the run failed or has not finished; its last "
                                  "instruction is in {})",
                                  trace.string(), r, (dir / "progress" / fmt::format("rank{}.txt", r)).string()));
    files.push_back(trace.string());
  }
  return files;
}

}  // namespace

OurTrace read_our_trace(const std::string& path) {
  OurTrace t;
  t.path = path;
  std::vector<std::pair<std::string, std::optional<int32_t>>> files;  // each file, and the rank it is named for
  if (is_train_run_dir(path)) {
    int32_t r = 0;
    for (std::string& f : train_run_files(path, t)) files.emplace_back(std::move(f), r++);
  } else if (fs::is_directory(path)) {
    static const std::regex kName(R"(replay\.([a-z]+)\.rank([0-9]+)\.json)");
    std::set<std::string> policies;
    for (const auto& e : fs::directory_iterator(path)) {
      std::smatch m;
      const std::string name = e.path().filename().string();
      if (!std::regex_match(name, m, kName)) continue;
      policies.insert(m[1]);
      const std::string digits = m[2];
      int32_t r = -1;  // digits beyond int32 or with a leading zero name no rank: the file is refused
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), r);
      if (ec != std::errc{} || end != digits.data() + digits.size() || (digits.size() > 1 && digits[0] == '0'))
        throw LiftError(fmt::format("whatif: {}: '{}' names no rank (replay writes replay.POLICY.rankN.json, N "
                                    "without leading zeros)",
                                    path, name));
      files.emplace_back(e.path().string(), r);
    }
    if (files.empty()) throw LiftError(fmt::format("whatif: {}: no replay.POLICY.rankN.json traces in it", path));
    if (policies.size() > 1)
      throw LiftError(fmt::format("whatif: {}: traces of {} policies ({}); keep one policy's files in the directory", path,
                                  policies.size(), fmt::join(policies, ", ")));
    t.config_path = fmt::format("{}/replay.{}.config.yaml", path, *policies.begin());
    std::sort(files.begin(), files.end());
  } else {
    files.emplace_back(path, std::nullopt);
    t.config_path = path + ".config.yaml";
  }
  std::map<int32_t, OurStep> steps;
  std::map<int32_t, std::vector<int32_t>> steps_of_rank;
  for (const auto& [f, rank] : files) read_file(f, rank, t, steps, steps_of_rank);
  if (t.slices_read == 0) throw LiftError(fmt::format("whatif: {}: no work slices", path));
  for (const auto& [rank, list] : steps_of_rank)
    if (list != steps_of_rank.begin()->second)
      throw LiftError(fmt::format("whatif: {}: rank {} marks other steps than rank {}", path, rank,
                                  steps_of_rank.begin()->first));
  if (!t.programs_path.empty()) common_step_origin(steps);
  for (auto& [k, st] : steps) {
    for (auto& [rank, row] : st.slices)
      for (auto& [name, list] : row)
        std::stable_sort(list.begin(), list.end(), [](const OurSlice& a, const OurSlice& b) { return a.start_ms < b.start_ms; });
    t.steps.push_back(std::move(st));
  }
  return t;
}

}  // namespace ppstream::whatif
