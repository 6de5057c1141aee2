// JSON and text renderings of analysis and diff results (units in every key/column name).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ppstream/analyze/analyze.h"

namespace ppstream::analyze {
using nlohmann::json;

namespace {

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json rank_json(const RankMetrics& m) {
  json j = {{"rank", m.rank.v},
            {"pp_rank", m.pp_rank ? json(*m.pp_rank) : json(nullptr)},
            {"compute_stream", m.compute_stream},
            {"step_time_ms", m.step_time_ms},
            {"compute_ms", m.compute_ms},
            {"compute_wait_ms", m.compute_wait_ms},
            {"stream_wait_ms", m.stream_wait_ms},
            {"pp_wait_ms", m.pp_wait_ms},
            {"pp_transfer_ms", m.pp_transfer_ms},
            {"p2p_recvs", m.p2p_recvs},
            {"p2p_unpaired", m.p2p_unpaired},
            {"bubble_ms", m.bubble_ms},
            {"bubble_ratio", m.bubble_ratio},
            {"reduce_exposed_ms", m.reduce_exposed_ms},
            {"reduce_comm_ms", m.reduce_comm_ms},
            {"reduce_overlap_ms", m.reduce_overlap_ms},
            {"reduce_unoverlapped_ms", m.reduce_unoverlapped_ms},
            {"reduce_overlap_ratio", opt(m.reduce_overlap_ratio)}};
  json streams = json::array();
  for (const auto& s : m.streams) {
    streams.push_back({{"stream", s.stream}, {"busy_ms", s.busy_ms}, {"wait_ms", s.wait_ms}, {"waits", s.waits}});
  }
  j["streams"] = streams;
  json ov = json::array();
  for (const auto& o : m.overlap) {
    ov.push_back({{"kind", o.kind}, {"group", o.group}, {"comm_ms", o.comm_ms},
                  {"overlap_ms", o.overlap_ms}, {"exposed_ms", o.exposed_ms}, {"ratio", opt(o.ratio)}});
  }
  j["overlap"] = ov;
  return j;
}

json step_json(const StepMetrics& s) {
  json ranks = json::array();
  for (const auto& r : s.ranks) ranks.push_back(rank_json(r));
  return {{"step", s.step ? json(*s.step) : json(nullptr)},
          {"step_time_ms", s.step_time_ms},
          {"bubble_ratio", s.bubble_ratio},
          {"reduce_exposed_ms", s.reduce_exposed_ms},
          {"reduce_overlap_ratio", opt(s.reduce_overlap_ratio)},
          {"ranks", ranks}};
}

std::string ratio_text(const std::optional<double>& r) {
  return r ? fmt::format("{:.2f}%", 100.0 * *r) : std::string("-");
}

}  // namespace

std::string AnalysisResult::to_json() const {
  json j;
  j["sources"] = sources;
  j["selected_step"] = selected_step ? json(*selected_step) : json(nullptr);
  j["total"] = step_json(total);
  json st = json::array();
  for (const auto& s : steps) st.push_back(step_json(s));
  j["steps"] = st;
  json w = json::array();
  for (const auto& p : longest_pp_waits) {
    w.push_back({{"rank", p.rank.v}, {"stream", p.stream}, {"name", p.name}, {"start_ms", p.start_ms}, {"wait_ms", p.wait_ms},
                 {"transfer_ms", p.transfer_ms}, {"paired", p.paired}});
  }
  j["longest_pp_waits"] = w;
  json ch = json::array();
  for (const auto& c : chains) {
    json links = json::array();
    for (const auto& l : c.links) {
      links.push_back({{"rank", l.rank.v}, {"stream", l.stream}, {"what", l.what}, {"reason", l.reason},
                       {"at_ms", l.at_ms}, {"delay_ms", l.delay_ms}});
    }
    ch.push_back({{"rank", c.rank.v}, {"stream", c.stream}, {"wait_ms", c.wait_ms}, {"at_ms", c.at_ms}, {"links", links}});
  }
  j["chains"] = ch;
  json v = json::array();
  for (const auto& f : vendor) {
    v.push_back({{"source", f.source}, {"producer", f.producer}, {"scope", f.scope}, {"column", f.column}, {"value_ms", f.value_ms}});
  }
  j["vendor_step_trace"] = v;
  json co = json::array();
  for (const auto& c : comm_ops) {
    co.push_back({{"source", c.source}, {"group", c.group}, {"step", c.step}, {"op", c.op}, {"rank", c.rank},
                  {"elapse_ms", c.elapse_ms}, {"transit_ms", c.transit_ms}, {"wait_ms", c.wait_ms},
                  {"sync_ms", c.sync_ms}, {"idle_ms", c.idle_ms}, {"wait_ratio", c.wait_ratio},
                  {"sync_ratio", c.sync_ratio}});
  }
  j["comm_ops"] = co;
  json pm = json::array();
  for (const auto& m : producer_metrics) {  // a malformed object would dump as "<discarded>": leave it out
    json parsed = json::parse(m, nullptr, false);
    if (!parsed.is_discarded()) pm.push_back(std::move(parsed));
  }
  j["producer_metrics"] = pm;
  j["notes"] = notes;
  return j.dump(2, ' ', false, json::error_handler_t::replace);  // names from traces may not be UTF-8
}

std::string AnalysisResult::to_text() const {
  std::string out;
  for (const auto& n : notes) out += fmt::format("note: {}\n", n);
  auto table = [&](const StepMetrics& s) {
    out += s.step ? fmt::format("step {}: step_time_ms {:.3f}", *s.step, s.step_time_ms)
                  : fmt::format("whole trace: step_time_ms {:.3f}", s.step_time_ms);
    out += fmt::format(", bubble_ratio {:.4f}, reduce_exposed_ms {:.3f} (max), reduce_overlap {}\n",
                       s.bubble_ratio, s.reduce_exposed_ms, ratio_text(s.reduce_overlap_ratio));
    out += fmt::format("  {:>6} {:>12} {:>12} {:>15} {:>14} {:>12} {:>11} {:>13} {:>17} {:>13}\n", "rank",
                       "step_ms", "compute_ms", "compute_wait_ms", "stream_wait_ms", "pp_wait_ms",
                       "bubble_pct", "comm_overlap", "reduce_exposed_ms", "reduce_overlap");
    for (const auto& r : s.ranks) {
      out += fmt::format("  {:>6} {:>12.3f} {:>12.3f} {:>15.3f} {:>14.3f} {:>12.3f} {:>10.2f}% {:>13} {:>17.3f} {:>13}\n",
                         r.rank.v, r.step_time_ms, r.compute_ms, r.compute_wait_ms, r.stream_wait_ms,
                         r.pp_wait_ms, 100.0 * r.bubble_ratio, ratio_text(r.overlap[0].ratio),
                         r.reduce_exposed_ms, ratio_text(r.reduce_overlap_ratio));
    }
  };
  if (!total.ranks.empty()) table(total);
  for (const auto& s : steps) table(s);
  if (!total.ranks.empty()) {
    out += "stream waits and busy time:\n";
    out += fmt::format("  {:>6} {:<20} {:>12} {:>12} {:>7}\n", "rank", "stream", "busy_ms", "wait_ms", "waits");
    for (const auto& r : total.ranks) {
      for (const auto& s : r.streams) {
        out += fmt::format("  {:>6} {:<20} {:>12.3f} {:>12.3f} {:>7}\n", r.rank.v, s.stream, s.busy_ms, s.wait_ms, s.waits);
      }
    }
    out += "communication/computation overlap (|comm ∩ compute| / |comm|):\n";
    out += fmt::format("  {:>6} {:<11} {:<24} {:>12} {:>12} {:>12} {:>9}\n", "rank", "kind", "group",
                       "comm_ms", "overlap_ms", "exposed_ms", "ratio");
    for (const auto& r : total.ranks) {
      for (const auto& o : r.overlap) {
        if (o.comm_ms == 0 && !o.group.empty()) continue;
        out += fmt::format("  {:>6} {:<11} {:<24} {:>12.3f} {:>12.3f} {:>12.3f} {:>9}\n", r.rank.v, o.kind,
                           o.group.empty() ? "*" : o.group, o.comm_ms, o.overlap_ms, o.exposed_ms,
                           ratio_text(o.ratio));
      }
    }
  }
  if (!longest_pp_waits.empty()) {
    out += "longest P2P receive waits (recv issued → matched; then the transfer):\n";
    for (const auto& w : longest_pp_waits) {
      out += fmt::format("  rank {:>5} {:<12} {:>10.3f} ms at {:.3f} ms (+{:.3f} ms transfer{})  {}\n", w.rank.v,
                         w.stream, w.wait_ms, w.start_ms, w.transfer_ms, w.paired ? "" : ", no paired send", w.name);
    }
  }
  for (const auto& c : chains) {
    out += fmt::format("wait chain: rank {} {} waited {:.3f} ms at {:.3f} ms\n", c.rank.v, c.stream, c.wait_ms, c.at_ms);
    for (const auto& l : c.links) {
      out += fmt::format("  rank {:>5} {:<10} {}{}\n", l.rank.v, l.stream, l.reason,
                         l.what.empty() ? "" : fmt::format("  [{}]", l.what));
    }
  }
  if (!vendor.empty()) {
    out += "producer step-trace figures (theirs, ms; Bubble definitions differ by producer, see docs):\n";
    for (const auto& f : vendor) {
      if (f.column == "Bubble" || f.column == "Stage" || f.column == "Computing" ||
          f.column == "Communication(Not Overlapped)" || f.column == "Overlapped" || f.column == "Free") {
        out += fmt::format("  {:<10} {:<32} {:<32} {:>12.3f}\n", f.producer, f.scope, f.column, f.value_ms);
      }
    }
  }
  if (!comm_ops.empty()) out += fmt::format("communication.json: {} op records\n", comm_ops.size());
  return out;
}

std::string DiffResult::to_json() const {
  json rows_j = json::array();
  for (const auto& r : rows) {
    rows_j.push_back({{"scope", r.scope}, {"metric", r.metric}, {"baseline", opt(r.baseline)},
                      {"optimized", opt(r.optimized)}, {"change", opt(r.change)}, {"change_pct", opt(r.change_pct)}});
  }
  return json{{"baseline_sources", baseline_sources}, {"optimized_sources", optimized_sources}, {"rows", rows_j}}.dump(2, ' ', false, json::error_handler_t::replace);
}

std::string DiffResult::to_text() const {
  std::string out = fmt::format("  {:<10} {:<34} {:>14} {:>14} {:>14} {:>9}\n", "scope", "metric", "baseline",
                                "optimized", "change", "change%");
  auto num = [](const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : std::string("-"); };
  for (const auto& r : rows) {
    out += fmt::format("  {:<10} {:<34} {:>14} {:>14} {:>14} {:>9}\n", r.scope, r.metric, num(r.baseline),
                       num(r.optimized), num(r.change),
                       r.change_pct ? fmt::format("{:+.1f}%", *r.change_pct) : std::string("-"));
  }
  return out;
}

}  // namespace ppstream::analyze
