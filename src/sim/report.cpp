// report_json / report_table: the simulator's outputs (names as in DESIGN.md, units in keys).
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "ppstream/sim/simulate.h"

namespace ppstream::sim {
namespace {

using nlohmann::json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json wait_json(const StreamWait& w) {
  json j = {{"rank", w.rank.v}, {"stream", w.stream}, {"index", w.index}, {"text", w.text}, {"event", w.event},
            {"kind", to_string(w.kind)}, {"start_ms", w.start_ms}, {"end_ms", w.end_ms}, {"wait_ms", w.ms()},
            {"cause", w.cause}};
  j["peer"] = w.peer ? json(w.peer->v) : json(nullptr);
  return j;
}

json rank_json(const RankMetrics& r) {
  json j = {{"rank", r.rank.v},
            {"pp_rank", r.pp_rank},
            {"step_end_ms", r.step_end_ms},
            {"compute_ms", r.compute_ms},
            {"compute_wait_ms", r.compute_wait_ms},
            {"reduce_exposed_ms", r.reduce_exposed_ms},
            {"reduce_comm_ms", r.reduce_comm_ms},
            {"reduce_overlap_ratio", opt(r.reduce_overlap_ratio)}};
  j["longest_compute_wait"] = r.longest_compute_wait ? wait_json(*r.longest_compute_wait) : json(nullptr);
  return j;
}

// The memory model's figures (memory.h): the peak over every trial, trial 0's peak per rank.
json memory_json(const PolicyRun& pr) {
  const MemoryReport& m = pr.memory;
  json ranks = json::array();
  for (const RankMemory& r : m.ranks) {
    if (!r.computed) continue;
    ranks.push_back({{"rank", r.rank.v}, {"pp_rank", r.pp_rank}, {"peak_bytes", r.peak_bytes}, {"peak_ms", r.peak_ms},
                     {"activation_bytes", r.at_peak.activations}, {"param_bytes", r.at_peak.params},
                     {"grad_bytes", r.at_peak.grads}, {"recv_bytes", r.at_peak.recv}, {"stashes", r.peak_stashes}});
  }
  return {{"peak_memory_bytes", pr.peak_memory_bytes}, {"trial0_peak_bytes", m.peak_bytes},
          {"trial0_peak_rank", m.peak_rank.v}, {"ranks", std::move(ranks)}};
}

json run_json(const SimReport& rep, const PolicyRun& pr) {
  const SimMetrics& m = pr.metrics;
  const int32_t dp = rep.world.dp();
  json j = {{"step_time_ms", m.step_time_ms},
            {"bubble_ratio", m.bubble_ratio},
            {"bubble_over_ideal", m.bubble_over_ideal},
            {"ideal_compute_ms", m.ideal_compute_ms},
            {"reduce_exposed_ms", m.reduce_exposed_ms},
            {"reduce_overlap_ratio", opt(m.reduce_overlap_ratio)},
            {"programs", pr.programs},
            {"instructions", pr.instructions},
            {"engine_events", pr.engine_events},
            {"engine_wall_ms", pr.engine_wall_ms}};
  j["trials"] = {{"n", pr.trials.step_time_ms.size()}, {"seed", rep.seed},      {"p50_ms", pr.trials.p50_ms},
                 {"p90_ms", pr.trials.p90_ms},          {"p99_ms", pr.trials.p99_ms}, {"mean_ms", pr.trials.mean_ms},
                 {"step_time_ms", pr.trials.step_time_ms}};
  // Per-PP-rank summary over every replica (the only per-rank view that stays small in cluster mode).
  std::map<int32_t, std::array<double, 4>> pp;  // max wait, sum wait, count, max exposed
  json ranks = json::array();
  for (const RankMetrics& r : m.ranks) {
    auto& s = pp[r.pp_rank];
    s[0] = std::max(s[0], r.compute_wait_ms), s[1] += r.compute_wait_ms, s[2] += 1, s[3] = std::max(s[3], r.reduce_exposed_ms);
    if (!rep.cluster || r.rank.v == r.pp_rank * dp) ranks.push_back(rank_json(r));
  }
  j["ranks"] = std::move(ranks);
  json summary = json::array();
  for (auto& [r, s] : pp)
    summary.push_back({{"pp_rank", r}, {"max_compute_wait_ms", s[0]}, {"mean_compute_wait_ms", s[1] / s[2]},
                       {"max_reduce_exposed_ms", s[3]}, {"ranks", static_cast<int64_t>(s[2])}});
  j["pp_rank_summary"] = std::move(summary);
  json waits = json::array();
  for (const StreamWait& w : m.compute_waits) waits.push_back(wait_json(w));
  j["compute_waits"] = std::move(waits);
  json p2p = json::array();
  for (const P2PTiming& t : m.p2p)
    p2p.push_back({{"rank", t.rank.v}, {"index", t.index}, {"stream", t.stream}, {"text", t.text}, {"posted_ms", t.posted_ms},
                   {"matched_ms", t.matched_ms}, {"end_ms", t.end_ms}, {"pp_wait_ms", t.pp_wait_ms()}});
  j["pp_wait_ms"] = std::move(p2p);
  json path = json::array();
  for (const CriticalStep& c : m.critical_path)
    path.push_back({{"rank", c.rank.v}, {"stream", c.stream}, {"index", c.index}, {"text", c.text},
                    {"start_ms", c.start_ms}, {"end_ms", c.end_ms}, {"via", c.via}});
  j["critical_path"] = std::move(path);
  j["memory"] = memory_json(pr);
  return j;
}

// The longest P2P compute wait of each detailed rank under `a`, and the wait at the same event under `b`.
struct WaitPair {
  StreamWait a;
  std::optional<double> b_ms;
};

std::vector<WaitPair> compare_waits(const SimMetrics& a, const SimMetrics& b) {
  std::map<int32_t, StreamWait> longest;
  for (const StreamWait& w : a.compute_waits)
    if (w.kind == WaitKind::P2P && (!longest.count(w.rank.v) || w.ms() > longest[w.rank.v].ms())) longest[w.rank.v] = w;
  std::vector<WaitPair> out;
  for (auto& [r, w] : longest) {
    WaitPair pair{w, 0.0};  // b lists only waits > 0: absent means it did not wait
    for (const StreamWait& x : b.compute_waits)
      if (x.rank == w.rank && x.event == w.event) pair.b_ms = x.ms();
    out.push_back(pair);
  }
  return out;
}

}  // namespace

std::string report_json(const SimReport& rep, int indent) {
  json j = {{"format", "ppstream.sim/1"},
            {"world", {{"pp", rep.world.pp}, {"vpp", rep.world.vpp}, {"shard", rep.world.shard},
                       {"replicate", rep.world.replicate}, {"expanded", rep.world.expanded}}},
            {"mode", to_string(rep.mode)},
            {"cluster", rep.cluster},
            {"platform", to_string(rep.platform)},
            {"link_sharing", to_string(rep.cost.link_sharing)}};
  json pol = json::object();
  for (const PolicyRun& pr : rep.runs) pol[to_string(pr.policy)] = run_json(rep, pr);
  j["policies"] = std::move(pol);
  if (rep.runs.size() == 2) {
    const SimMetrics& a = rep.runs[0].metrics;
    const SimMetrics& b = rep.runs[1].metrics;
    const std::string na = to_string(rep.runs[0].policy), nb = to_string(rep.runs[1].policy);
    json cmp = {{"baseline", na}, {"candidate", nb}};
    cmp["step_time_ms"] = {{na, a.step_time_ms}, {nb, b.step_time_ms}, {"change_ms", b.step_time_ms - a.step_time_ms},
                           {"change_ratio", a.step_time_ms > 0 ? (b.step_time_ms - a.step_time_ms) / a.step_time_ms : 0.0}};
    cmp["reduce_overlap_ratio"] = {{na, opt(a.reduce_overlap_ratio)}, {nb, opt(b.reduce_overlap_ratio)}};
    cmp["reduce_exposed_ms"] = {{na, a.reduce_exposed_ms}, {nb, b.reduce_exposed_ms}};
    cmp["bubble_ratio"] = {{na, a.bubble_ratio}, {nb, b.bubble_ratio}};
    json waits = json::array();
    for (const WaitPair& w : compare_waits(a, b))
      waits.push_back({{"rank", w.a.rank.v}, {"event", w.a.event}, {"cause", w.a.cause},
                       {"peer", w.a.peer ? json(w.a.peer->v) : json(nullptr)}, {na + "_ms", w.a.ms()}, {nb + "_ms", opt(w.b_ms)}});
    cmp["longest_p2p_wait"] = std::move(waits);
    j["comparison"] = std::move(cmp);
  }
  return j.dump(indent);
}

std::string report_table(const SimReport& rep) {
  std::string out = fmt::format("world pp={} vpp={} shard={} replicate={}{}  link_sharing={}  platform={}\n", rep.world.pp,
                                rep.world.vpp, rep.world.shard, rep.world.replicate,
                                rep.cluster ? " (cluster: every replica)" : "", to_string(rep.cost.link_sharing),
                                to_string(rep.platform));
  out += fmt::format("{:<26}", "metric");
  for (const PolicyRun& pr : rep.runs) out += fmt::format("{:>14}", to_string(pr.policy));
  if (rep.runs.size() == 2) out += fmt::format("{:>14}", "change");
  out += "\n";
  auto row = [&](const char* name, auto get, bool diff) {
    out += fmt::format("{:<26}", name);
    std::vector<double> v;
    for (const PolicyRun& pr : rep.runs) {
      const std::optional<double> x = get(pr);
      out += x ? fmt::format("{:>14.3f}", *x) : fmt::format("{:>14}", "-");
      v.push_back(x.value_or(0.0));
    }
    if (diff && v.size() == 2) out += fmt::format("{:>+14.3f}", v[1] - v[0]);
    out += "\n";
  };
  row("step_time_ms", [](const PolicyRun& p) { return std::optional<double>(p.metrics.step_time_ms); }, true);
  row("bubble_ratio", [](const PolicyRun& p) { return std::optional<double>(p.metrics.bubble_ratio); }, true);
  row("reduce_exposed_ms", [](const PolicyRun& p) { return std::optional<double>(p.metrics.reduce_exposed_ms); }, true);
  row("reduce_overlap_ratio", [](const PolicyRun& p) { return p.metrics.reduce_overlap_ratio; }, true);
  if (!rep.runs.empty() && rep.runs[0].trials.step_time_ms.size() > 1) {
    row("step_time_p50_ms", [](const PolicyRun& p) { return std::optional<double>(p.trials.p50_ms); }, true);
    row("step_time_p90_ms", [](const PolicyRun& p) { return std::optional<double>(p.trials.p90_ms); }, true);
    row("step_time_p99_ms", [](const PolicyRun& p) { return std::optional<double>(p.trials.p99_ms); }, true);
    row("step_time_mean_ms", [](const PolicyRun& p) { return std::optional<double>(p.trials.mean_ms); }, true);
  }
  row("peak_memory_gib", [](const PolicyRun& p) { return std::optional<double>(p.peak_memory_bytes / kGiB); }, true);
  std::map<int32_t, std::vector<double>> peaks;
  for (const PolicyRun& pr : rep.runs)
    for (const RankMemory& r : pr.memory.ranks)
      if (r.computed) peaks[r.rank.v].push_back(r.peak_bytes / kGiB);
  for (auto& [r, v] : peaks) {
    out += fmt::format("{:<26}", fmt::format("peak_memory_gib r{}", r));
    for (double x : v) out += fmt::format("{:>14.3f}", x);
    if (v.size() == 2) out += fmt::format("{:>+14.3f}", v[1] - v[0]);
    out += "\n";
  }
  std::map<int32_t, std::vector<double>> waits;
  for (const PolicyRun& pr : rep.runs)
    for (const RankMetrics& r : pr.metrics.ranks)
      if (!rep.cluster || r.rank.v == r.pp_rank * rep.world.dp()) waits[r.rank.v].push_back(r.compute_wait_ms);
  for (auto& [r, v] : waits) {
    out += fmt::format("{:<26}", fmt::format("compute_wait_ms r{}", r));
    for (double x : v) out += fmt::format("{:>14.3f}", x);
    if (v.size() == 2) out += fmt::format("{:>+14.3f}", v[1] - v[0]);
    out += "\n";
  }
  if (rep.runs.size() == 2) {
    out += fmt::format("longest P2P wait on compute under {} (and the same wait under {}):\n", to_string(rep.runs[0].policy),
                       to_string(rep.runs[1].policy));
    for (const WaitPair& w : compare_waits(rep.runs[0].metrics, rep.runs[1].metrics))
      out += fmt::format("  r{} WAIT {} (recv <-r{})  {:.3f} ms -> {}\n", w.a.rank.v, w.a.event, w.a.peer ? w.a.peer->v : -1,
                         w.a.ms(), w.b_ms ? fmt::format("{:.3f} ms", *w.b_ms) : std::string("-"));
  }
  return out;
}

}  // namespace ppstream::sim
