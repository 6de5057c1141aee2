// JSON and text renderings of analysis and diff results (units in every key/column name).
#include <fmt/format.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "ppstream/analyze/analyze.h"

namespace ppstream::analyze {
using nlohmann::json;

namespace {

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json opt(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }

json rank_json(const RankMetrics& m) {
  json j = {{"rank", m.rank.v},
            {"pp_rank", m.pp_rank ? json(*m.pp_rank) : json(nullptr)},
            {"compute_stream", m.compute_stream},
            {"step_time_ms", m.step_time_ms},
            {"host_step_ms", opt(m.host_step_ms)},
            {"device_step_ms", m.device_step_ms},
            {"span_ms", m.span_ms},
            {"preparing_ms", opt(m.preparing_ms)},
            {"compute_ms", m.compute_ms},
            {"comm_ms", m.comm_ms},
            {"overlapped_ms", m.overlapped_ms},
            {"comm_not_overlapped_ms", m.comm_not_overlapped_ms},
            {"free_ms", m.free_ms},
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
            {"reduce_overlap_ratio", opt(m.reduce_overlap_ratio)},
            {"waits_attributed_by", {{"record", m.waits_by_record}, {"stream", m.waits_by_stream}, {"timing", m.waits_by_timing}}}};
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

// Writes a document piece by piece in json::dump(2)'s layout, so that a report of many ranks is
// never held whole as a json tree: an object's members in key order (nlohmann's std::map), each
// small value dumped on its own and re-indented to its depth (JSON strings hold no raw newline).
class JsonOut {
 public:
  explicit JsonOut(std::ostream& out) : out_(out) {}
  using Writer = std::function<void(JsonOut&, int level)>;
  using Members = std::map<std::string, Writer>;

  void value(const json& j, int level) {
    const std::string text = j.dump(2, ' ', false, json::error_handler_t::replace);  // names may not be UTF-8
    std::string pad(1, '\n');
    pad.append(static_cast<size_t>(2 * level), ' ');
    size_t from = 0;
    for (size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1) {
      out_.write(text.data() + from, static_cast<std::streamsize>(nl - from));
      out_ << pad;
    }
    out_.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
  }
  void object(const Members& members, int level) {
    if (members.empty()) {
      out_ << "{}";
      return;
    }
    const std::string pad(static_cast<size_t>(2 * (level + 1)), ' ');
    bool first = true;
    for (const auto& [key, write] : members) {
      out_ << (first ? "{\n" : ",\n") << pad << json(key).dump(-1, ' ', false, json::error_handler_t::replace) << ": ";
      write(*this, level + 1);
      first = false;
    }
    out_ << "\n" << std::string(static_cast<size_t>(2 * level), ' ') << "}";
  }
  template <typename Item>
  void array(size_t n, const Item& item, int level) {
    if (n == 0) {
      out_ << "[]";
      return;
    }
    const std::string pad(static_cast<size_t>(2 * (level + 1)), ' ');
    for (size_t i = 0; i < n; ++i) {
      out_ << (i == 0 ? "[\n" : ",\n") << pad;
      item(i, level + 1);
    }
    out_ << "\n" << std::string(static_cast<size_t>(2 * level), ' ') << "]";
  }

 private:
  std::ostream& out_;
};

// A member whose value is dumped whole.
JsonOut::Writer whole(json j) {
  return [j = std::move(j)](JsonOut& o, int level) { o.value(j, level); };
}

// One step's object, its ranks one at a time.
void write_step(JsonOut& o, const StepMetrics& s, int level) {
  o.object({{"step", whole(s.step ? json(*s.step) : json(nullptr))},
            {"window", whole(s.window)},
            {"step_time_ms", whole(s.step_time_ms)},
            {"span_ms", whole(s.span_ms)},
            {"bubble_ratio", whole(s.bubble_ratio)},
            {"reduce_exposed_ms", whole(s.reduce_exposed_ms)},
            {"reduce_overlap_ratio", whole(opt(s.reduce_overlap_ratio))},
            {"ranks", [&s](JsonOut& out, int l) {
               out.array(s.ranks.size(), [&](size_t i, int li) { out.value(rank_json(s.ranks[i]), li); }, l);
             }}},
           level);
}

std::string ratio_text(const std::optional<double>& r) {
  return r ? fmt::format("{:.2f}%", 100.0 * *r) : std::string("-");
}

}  // namespace

std::string AnalysisResult::to_json() const {
  std::ostringstream out;
  write_json(out);
  return out.str();
}

void AnalysisResult::write_json(std::ostream& out) const {
  JsonOut o(out);
  JsonOut::Members j;
  j["sources"] = whole(sources);
  j["clock_base"] = whole(clock_base);
  j["selected_step"] = whole(selected_step ? json(*selected_step) : json(nullptr));
  j["total"] = [this](JsonOut& w, int level) { write_step(w, total, level); };
  j["steps"] = [this](JsonOut& w, int level) {
    w.array(steps.size(), [&](size_t i, int l) { write_step(w, steps[i], l); }, level);
  };
  j["hta_window"] = [this](JsonOut& w, int level) {
    if (hta_window) write_step(w, *hta_window, level);
    else w.value(nullptr, level);
  };
  j["dropped_events"] = whole(dropped_events);
  json w = json::array();
  for (const auto& p : longest_pp_waits) {
    w.push_back({{"rank", p.rank.v}, {"stream", p.stream}, {"name", p.name}, {"start_ms", p.start_ms}, {"wait_ms", p.wait_ms},
                 {"transfer_ms", p.transfer_ms}, {"paired", p.paired}});
  }
  j["longest_pp_waits"] = whole(std::move(w));
  json ch = json::array();
  for (const auto& c : chains) {
    json links = json::array();
    for (const auto& l : c.links) {
      links.push_back({{"rank", l.rank.v}, {"stream", l.stream}, {"what", l.what}, {"reason", l.reason},
                       {"at_ms", l.at_ms}, {"delay_ms", l.delay_ms},
                       {"attributed_by", l.attributed_by ? json(to_string(*l.attributed_by)) : json(nullptr)}});
    }
    ch.push_back({{"rank", c.rank.v}, {"stream", c.stream}, {"wait_ms", c.wait_ms}, {"at_ms", c.at_ms}, {"links", std::move(links)}});
  }
  j["chains"] = whole(std::move(ch));
  json v = json::array();
  for (const auto& f : vendor) {
    v.push_back({{"source", f.source}, {"producer", f.producer}, {"scope", f.scope}, {"column", f.column}, {"value_ms", f.value_ms}});
  }
  j["vendor_step_trace"] = whole(std::move(v));
  json co = json::array();
  for (const auto& c : comm_ops) {
    co.push_back({{"source", c.source}, {"group", c.group}, {"step", c.step}, {"op", c.op}, {"rank", c.rank},
                  {"elapse_ms", c.elapse_ms}, {"transit_ms", c.transit_ms}, {"wait_ms", c.wait_ms},
                  {"sync_ms", c.sync_ms}, {"idle_ms", c.idle_ms}, {"wait_ratio", c.wait_ratio},
                  {"sync_ratio", c.sync_ratio}, {"lane_group", c.lane_group}, {"lane_bytes", c.lane_bytes},
                  {"lane_ms", opt(c.lane_ms)}});
  }
  j["comm_ops"] = whole(std::move(co));
  json cl = json::array();
  for (const auto& c : comm_links) {
    cl.push_back({{"source", c.source}, {"rank", c.rank}, {"step", c.step}, {"kind", c.kind}, {"op", c.op},
                  {"src", c.src}, {"dst", c.dst}, {"src_global", opt(c.src_global)}, {"dst_global", opt(c.dst_global)},
                  {"ranks", c.src_global ? "global" : "group-local"}, {"transport", c.transport}, {"size_mb", c.size_mb},
                  {"time_ms", c.time_ms}, {"bandwidth_gbps", c.bandwidth_gbps}, {"lane_ms", opt(c.lane_ms)}});
  }
  j["comm_links"] = whole(std::move(cl));
  json sk = json::array();
  for (const auto& x : skews) {
    sk.push_back({{"group", x.group}, {"op", x.op}, {"ordinal", x.ordinal}, {"ranks", x.ranks},
                  {"first_rank", x.first_rank.v}, {"last_rank", x.last_rank.v}, {"skew_ms", x.skew_ms}});
  }
  j["collective_skews"] = whole(std::move(sk));
  json sr = json::array();
  for (const auto& x : slow_ranks) {
    sr.push_back({{"group", x.group}, {"rank", x.rank.v}, {"instances", x.instances}, {"last", x.last},
                  {"late_ms", x.late_ms}, {"caused_wait_ms", x.caused_wait_ms}});
  }
  j["slow_ranks"] = whole(std::move(sr));
  json sc = json::array();
  for (const auto& x : straggler_chain) {
    sc.push_back({{"waiter", x.waiter.v}, {"group", x.group}, {"op", x.op}, {"ordinal", x.ordinal},
                  {"waited_for", x.waited_for.v}, {"wait_ms", x.wait_ms}});
  }
  j["straggler_chain"] = whole(std::move(sc));
  json pm = json::array();
  for (const auto& m : producer_metrics) {  // a malformed object would dump as "<discarded>": leave it out
    json parsed = json::parse(m, nullptr, false);
    if (!parsed.is_discarded()) pm.push_back(std::move(parsed));
  }
  j["producer_metrics"] = whole(std::move(pm));
  j["notes"] = whole(notes);
  o.object(j, 0);
}


std::string AnalysisResult::to_text() const {
  std::string out;
  for (const auto& n : notes) out += fmt::format("note: {}\n", n);
  auto table = [&](const StepMetrics& s) {
    if (s.step) out += fmt::format("step {}: step_time_ms {:.3f} (host step, max over ranks)", *s.step, s.step_time_ms);
    else if (steps.empty()) out += fmt::format("{}: step_time_ms {:.3f} (device span; no step markers)", s.window, s.span_ms);
    else out += fmt::format("{}: span_ms {:.3f}, mean step_time_ms {:.3f}", s.window, s.span_ms, s.step_time_ms);
    out += fmt::format(", bubble_ratio {:.4f}, reduce_exposed_ms {:.3f} (max), reduce_overlap {}\n",
                       s.bubble_ratio, s.reduce_exposed_ms, ratio_text(s.reduce_overlap_ratio));
    const bool whole = !s.step.has_value();
    out += fmt::format("  {:>6} {:>12} {:>12} {:>15} {:>14} {:>12} {:>11} {:>13} {:>17} {:>13}\n", "rank",
                       whole ? "span_ms" : "step_ms", "compute_ms", "compute_wait_ms", "stream_wait_ms", "pp_wait_ms",
                       "bubble_pct", "comm_overlap", "reduce_exposed_ms", "reduce_overlap");
    for (const auto& r : s.ranks) {
      out += fmt::format("  {:>6} {:>12.3f} {:>12.3f} {:>15.3f} {:>14.3f} {:>12.3f} {:>10.2f}% {:>13} {:>17.3f} {:>13}\n",
                         r.rank.v, whole ? r.span_ms : r.step_time_ms, r.compute_ms, r.compute_wait_ms, r.stream_wait_ms,
                         r.pp_wait_ms, 100.0 * r.bubble_ratio, ratio_text(r.overlap[0].ratio),
                         r.reduce_exposed_ms, ratio_text(r.reduce_overlap_ratio));
    }
  };
  auto columns = [&](const StepMetrics& s) {
    out += fmt::format("  device-step columns (as the producer's step_trace_time.csv, computed from the timeline):\n");
    out += fmt::format("  {:>6} {:>13} {:>15} {:>12} {:>12} {:>13} {:>22} {:>10} {:>13}\n", "rank", "host_step_ms",
                       "device_step_ms", "compute_ms", "comm_ms", "overlapped_ms", "comm_not_overlapped_ms",
                       "free_ms", "preparing_ms");
    auto o = [](const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : std::string("-"); };
    for (const auto& r : s.ranks) {
      out += fmt::format("  {:>6} {:>13} {:>15.3f} {:>12.3f} {:>12.3f} {:>13.3f} {:>22.3f} {:>10.3f} {:>13}\n", r.rank.v,
                         o(r.host_step_ms), r.device_step_ms, r.compute_ms, r.comm_ms, r.overlapped_ms,
                         r.comm_not_overlapped_ms, r.free_ms, o(r.preparing_ms));
    }
  };
  if (!total.ranks.empty()) table(total);
  for (const auto& s : steps) {
    table(s);
    columns(s);
  }
  if (hta_window) {
    out += "hta_window (all steps but each rank's last, device work by launch; HTA's get_comm_comp_overlap):\n";
    for (const auto& r : hta_window->ranks) {
      out += fmt::format("  rank {:>5} comm_ms {:.3f} overlap_ms {:.3f} overlap {}\n", r.rank.v, r.comm_ms,
                         r.overlapped_ms, ratio_text(r.overlap[0].ratio));
    }
  }
  if (dropped_events > 0) out += fmt::format("dropped events (duration out of bounds): {}\n", dropped_events);
  if (!total.ranks.empty()) {
    out += "stream waits and busy time:\n";
    out += fmt::format("  {:>6} {:<20} {:>12} {:>12} {:>7}\n", "rank", "stream", "busy_ms", "wait_ms", "waits");
    for (const auto& r : total.ranks) {
      for (const auto& s : r.streams) {
        out += fmt::format("  {:>6} {:<20} {:>12.3f} {:>12.3f} {:>7}\n", r.rank.v, s.stream, s.busy_ms, s.wait_ms, s.waits);
      }
      if (r.waits_by_record + r.waits_by_stream > 0) {
        out += fmt::format("  {:>6} waits attributed by the event's record {}, by its recorded stream {}, by timing {}\n",
                           r.rank.v, r.waits_by_record, r.waits_by_stream, r.waits_by_timing);
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
  if (clock_base != "global" && (!chains.empty() || !longest_pp_waits.empty())) {
    out += fmt::format("positions (at ms) on one base: {}\n",
                       clock_base == "base_time" ? "the producers' base times"
                       : clock_base == "p2p"     ? "ranks' clocks aligned by P2P send/receive pairs"
                                                 : "each rank's own first device slice");
  }
  for (const auto& c : chains) {
    out += fmt::format("wait chain: rank {} {} waited {:.3f} ms at {:.3f} ms\n", c.rank.v, c.stream, c.wait_ms, c.at_ms);
    for (const auto& l : c.links) {
      out += fmt::format("  rank {:>5} {:<10} {}{}{}\n", l.rank.v, l.stream, l.reason,
                         l.attributed_by ? fmt::format(" (wait attributed by {})", to_string(*l.attributed_by)) : "",
                         l.what.empty() ? "" : fmt::format("  [{}]", l.what));
    }
  }
  if (!skews.empty()) {
    out += "collective arrival skew (lag = longest duration − own duration; largest first):\n";
    out += fmt::format("  {:<24} {:<40} {:>7} {:>6} {:>10} {:>10} {:>10}\n", "group", "op", "ordinal", "ranks", "first",
                       "last", "skew_ms");
    for (const auto& x : skews) {
      out += fmt::format("  {:<24} {:<40} {:>7} {:>6} {:>10} {:>10} {:>10.3f}\n", x.group, x.op, x.ordinal, x.ranks,
                         x.first_rank.v, x.last_rank.v, x.skew_ms);
    }
    out += "slow ranks per group:\n";
    out += fmt::format("  {:<24} {:>6} {:>10} {:>6} {:>10} {:>15}\n", "group", "rank", "instances", "last", "late_ms",
                       "caused_wait_ms");
    for (const auto& x : slow_ranks) {
      out += fmt::format("  {:<24} {:>6} {:>10} {:>6} {:>10.3f} {:>15.3f}\n", x.group, x.rank.v, x.instances, x.last,
                         x.late_ms, x.caused_wait_ms);
    }
  }
  for (const auto& x : straggler_chain) {
    out += fmt::format("straggler chain: rank {} waited {:.3f} ms at {} (group {}, #{}) for rank {}\n", x.waiter.v,
                       x.wait_ms, x.op, x.group, x.ordinal, x.waited_for.v);
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
  if (!comm_ops.empty()) {
    out += fmt::format("communication.json ops (theirs, ms):\n  {:>5} {:<11} {:<48} {:>10} {:>10} {:>10} {:>10}\n", "rank",
                       "group", "op", "elapse_ms", "transit_ms", "wait_ms", "sync_ms");
    for (const auto& c : comm_ops) {
      out += fmt::format("  {:>5} {:<11} {:<48} {:>10.3f} {:>10.3f} {:>10.3f} {:>10.3f}\n", c.rank, c.group, c.op,
                         c.elapse_ms, c.transit_ms, c.wait_ms, c.sync_ms);
    }
  }
  bool peers = false;
  for (const auto& l : comm_links) {
    if (l.kind != "p2p" || l.src == l.dst) continue;
    if (!peers) {
      out += fmt::format("P2P peers (communication_matrix.json; global ranks through the group's rank list, else "
                         "group-local as written):\n  {:>5} {:<48} {:<24} {:<9} {:>9} {:>9} {:>9}\n",
                         "rank", "op", "src → dst", "transport", "size_mb", "time_ms", "lane_ms");
    }
    peers = true;
    const std::string ends = l.src_global ? fmt::format("{} → {} global", *l.src_global, *l.dst_global)
                                          : fmt::format("{} → {} group-local", l.src, l.dst);
    out += fmt::format("  {:>5} {:<48} {:<24} {:<9} {:>9.3f} {:>9.3f} {:>9}\n", l.rank, l.op, ends, l.transport,
                       l.size_mb, l.time_ms, l.lane_ms ? fmt::format("{:.3f}", *l.lane_ms) : std::string("-"));
  }
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
