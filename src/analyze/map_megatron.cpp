// Field map of Megatron-LM timer traces (megatron.h, docs/whatif.md "Input"): the what-if
// artifact's timeline. A timer event carries args.step and args.seq_id; its lane (and so its PP
// rank and kind) is known only from the thread_name metadata, which may follow the events.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>

#include "mappers.h"

namespace ppstream::analyze {

const char* to_string(TimerLane l) {
  switch (l) {
    case TimerLane::COMPUTE: return "compute";
    case TimerLane::PP_COMM: return "pp-comm";
    case TimerLane::TP_COMM: return "tp-comm";
    case TimerLane::DP_COMM: return "dp-comm";
  }
  return "?";
}

namespace {

// Reads "<word> <int>" at the front of `s`, advancing it; false when it is not there.
bool take_rank(std::string_view& s, std::string_view word, int32_t& out) {
  if (!s.starts_with(word)) return false;
  s.remove_prefix(word.size());
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  if (r.ec != std::errc{} || out < 0) return false;
  s.remove_prefix(static_cast<size_t>(r.ptr - s.data()));
  return true;
}

}  // namespace

std::optional<TimerLaneName> parse_timer_lane(std::string_view s) {
  TimerLaneName n;
  if (!take_rank(s, "PP rank ", n.pp_rank) || !s.starts_with(", ")) return std::nullopt;
  s.remove_prefix(2);
  if (!take_rank(s, "TP rank ", n.tp_rank) || !s.starts_with(", ")) return std::nullopt;
  s.remove_prefix(2);
  static constexpr std::pair<std::string_view, TimerLane> kLanes[] = {{"compute", TimerLane::COMPUTE},
                                                                       {"pp-comm", TimerLane::PP_COMM},
                                                                       {"tp-comm", TimerLane::TP_COMM},
                                                                       {"dp-comm", TimerLane::DP_COMM}};
  for (const auto& [word, lane] : kLanes) {
    if (s == word) {
      n.lane = lane;
      return n;
    }
  }
  return std::nullopt;
}

size_t TimerOps::WorkerHash::operator()(const Worker& w) const {
  uint64_t h = (static_cast<uint64_t>(static_cast<uint32_t>(w.dp_rank)) << 32) | static_cast<uint32_t>(w.tid);
  h ^= (static_cast<uint64_t>(static_cast<uint32_t>(w.pp_rank)) << 21) + (static_cast<uint64_t>(w.tp_rank) << 7) +
       static_cast<uint64_t>(w.lane);
  return static_cast<size_t>(h * 0x9E3779B97F4A7C15ull >> 16);
}

void TimerOps::push_back(const TimerOp& op) {
  const Worker w{op.dp_rank, op.tid, op.pp_rank, op.tp_rank, op.lane};
  if (last_worker_ == UINT32_MAX || !(workers_[last_worker_] == w)) {
    const auto [it, fresh] = index_.try_emplace(w, static_cast<uint32_t>(workers_.size()));
    if (fresh) {
      workers_.push_back(w);
      first_op_.push_back(ops_.size());
    }
    last_worker_ = it->second;
  }
  ops_.push_back({op.start_ns, op.dur_ns, op.offset, op.step, op.chunk, op.mb, op.seq, op.name, last_worker_});
}

void TimerOps::resolve_file_lanes(const std::function<void(TimerOp&)>& resolve) {
  for (size_t w = file_first_worker_; w < workers_.size(); ++w) {
    TimerOp op = (*this)[first_op_[w]];
    resolve(op);
    workers_[w] = {op.dp_rank, op.tid, op.pp_rank, op.tp_rank, op.lane};
  }
  start_file();  // the index's keys were the unresolved lanes
}

void TimerOps::start_file() {
  index_.clear();
  file_first_worker_ = workers_.size();
  last_worker_ = UINT32_MAX;
}

TimerOp TimerOps::unpack(const TimerOpRecord& r) const {
  const Worker& w = workers_[r.worker];
  return {r.start_ns, r.dur_ns, r.offset, r.step, w.dp_rank, w.pp_rank, w.tp_rank, r.chunk, r.mb, r.seq, w.tid, r.name,
          w.lane};  // TimerOp's members in their order
}

namespace detail {

void add_megatron_scan(ScanSpec& spec) {
  spec.args.insert(spec.args.end(), {arg_key("step", IntArg::STEP), arg_key("model_chunk", IntArg::MODEL_CHUNK),
                                     arg_key("mb_id", IntArg::MB_ID), arg_key("seq_id", IntArg::SEQ_ID)});
  // A timer op with the wrong "ph" (or none) reaches the reader, which refuses it (claims_timer_op).
  spec.claim_keys.insert(spec.claim_keys.end(), {"step", "seq_id"});
}

namespace {
bool timer_name(std::string_view name) {
  return std::find(kMegatronTimerNames.begin(), kMegatronTimerNames.end(), name) != kMegatronTimerNames.end();
}
}  // namespace

bool claims_timer_op(const std::string& path, const RawEvent& ev, bool by_name) {
  const auto given = [&](IntArg a) { return ev.args.given(static_cast<size_t>(a)); };
  const bool args = given(IntArg::STEP) || given(IntArg::SEQ_ID);
  if (!args && !(by_name && ev.ph == 'X' && timer_name(ev.name))) return false;
  const auto where = [&] { return fmt::format("{}: byte {}: event #{} '{}'", path, ev.offset, ev.index, ev.name); };
  if (ev.ph != 'X') {
    throw TraceError(fmt::format("{}: gives args.step / args.seq_id (a Megatron timer op) but its \"ph\" is {}; "
                                 "expected \"X\"",
                                 where(), ev.ph == 0 ? std::string("missing") : fmt::format("'{}'", ev.ph)));
  }
  for (const auto& [a, key] : {std::pair{IntArg::STEP, "step"}, std::pair{IntArg::SEQ_ID, "seq_id"}}) {
    if (!arg(ev, a)) {
      throw TraceError(fmt::format("{}: a Megatron timer op with args.{} {}; expected an integer (a timer op gives "
                                   "args.step and args.seq_id, docs/whatif.md \"Input\")",
                                   where(), key,
                                   given(a) ? "that is no integer" : ev.args_null ? "missing (\"args\" is null)" : "missing"));
    }
  }
  return true;
}

std::optional<TimerOp> megatron_event(const RawEvent& ev, StringTable& strings) {
  const auto step = arg(ev, IntArg::STEP), seq = arg(ev, IntArg::SEQ_ID);
  if (ev.ph != 'X' || !step || !seq || !arg(ev, StrArg::KIND).empty()) return std::nullopt;
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  const auto chunk = arg(ev, IntArg::MODEL_CHUNK), mb = arg(ev, IntArg::MB_ID);
  // The first field out of its range, named with its value (or "missing" / "no integer").
  const auto bad = [&](std::string_view field, std::optional<int64_t> v, int64_t lo) {
    if (v && *v >= lo && *v <= kMax) return;
    throw TraceError(fmt::format("byte {}: event #{} '{}': a Megatron timer op needs {} in {}..{} ({}); it is {}",
                                 ev.offset, ev.index, ev.name, field, lo, kMax,
                                 field == "pid" ? "the DP rank" : field == "tid" ? "the lane's thread" : "docs/whatif.md \"Input\"",
                                 v ? fmt::format("{}", *v) : std::string("missing or no integer")));
  };
  bad("pid", ev.pid, 0);
  bad("tid", ev.tid, 0);
  bad("args.step", step, 0);
  bad("args.seq_id", seq, 0);
  if (chunk) bad("args.model_chunk", chunk, -1);
  if (mb) bad("args.mb_id", mb, -1);
  TimerOp op;
  op.start_ns = ev.ts_ns.value_or(0);
  op.dur_ns = ev.dur_ns.value_or(0);
  op.offset = static_cast<int64_t>(ev.offset);
  op.step = static_cast<int32_t>(*step);
  op.seq = static_cast<int32_t>(*seq);
  op.chunk = static_cast<int32_t>(chunk.value_or(-1));
  op.mb = static_cast<int32_t>(mb.value_or(-1));
  op.dp_rank = static_cast<int32_t>(*ev.pid);
  op.tid = static_cast<int32_t>(*ev.tid);
  op.name = strings.intern(ev.name);
  return op;
}

TimerLaneResolver::TimerLaneResolver(const std::string& path, const LaneNames& names) : path_(path), names_(names) {
  for (const auto& [key, text] : names.thread) {
    if (auto l = parse_timer_lane(text)) lanes_.emplace(key, *l);
  }
  last_ = lanes_.end();
}

void TimerLaneResolver::operator()(TimerOp& op) {
  // Ops of one lane come in runs: look the lane up only when it changes.
  const std::pair<int64_t, int64_t> key{op.dp_rank, op.tid};
  if (last_ == lanes_.end() || last_->first != key) last_ = lanes_.find(key);
  if (last_ == lanes_.end()) {
    auto t = names_.thread.find(key);
    throw TraceError(fmt::format("{}: byte {}: timer op on pid {} tid {}: its thread is named {}; expected a "
                                 "thread_name \"PP rank p, TP rank t, compute|pp-comm|tp-comm|dp-comm\"",
                                 path_, op.offset, op.dp_rank, op.tid,
                                 t == names_.thread.end() ? std::string("nowhere") : "'" + t->second + "'"));
  }
  op.pp_rank = last_->second.pp_rank;
  op.tp_rank = last_->second.tp_rank;
  op.lane = last_->second.lane;
}

namespace {

CollectiveOp collective_of(std::string_view name) {
  if (name.find("reduce-scatter") != std::string_view::npos) return CollectiveOp::REDUCE_SCATTER;
  if (name.find("all-gather") != std::string_view::npos) return CollectiveOp::ALL_GATHER;
  // optimizer-clip-main-grad times the gradient-norm all-reduce (Megatron's clip_grad_norm).
  if (name.find("all-reduce") != std::string_view::npos || name.find("clip") != std::string_view::npos)
    return CollectiveOp::ALL_REDUCE;
  return CollectiveOp::OTHER;
}

}  // namespace

void map_megatron_workers(const std::string& path, std::vector<TimerOp> ops, const LaneNames& names,
                          StringTable& strings, std::vector<RankTimeline>& out) {
  TimerLaneResolver resolve(path, names);
  for (TimerOp& op : ops) resolve(op);
  int32_t dp = 0;
  for (const TimerOp& op : ops) dp = std::max(dp, op.dp_rank + 1);
  std::map<int64_t, RankTimeline> workers;  // rank → timeline
  std::map<std::pair<int64_t, int32_t>, std::pair<int64_t, int64_t>> spans;  // (rank, step) → [start, end)
  for (const TimerOp& op : ops) {
    const int64_t rank = int64_t{op.pp_rank} * dp + op.dp_rank;
    if (rank > std::numeric_limits<int32_t>::max()) {
      throw TraceError(fmt::format("{}: byte {}: PP rank {} x {} DP ranks is beyond int32 ranks", path, op.offset,
                                   op.pp_rank, dp));
    }
    RankTimeline& tl = workers[rank];
    tl.rank = Rank(static_cast<int32_t>(rank));
    tl.pp_rank = op.pp_rank;
    Slice s;
    s.start_ns = op.start_ns;
    s.dur_ns = op.dur_ns;
    s.stream = tl.stream_index(to_string(op.lane), static_cast<int64_t>(op.lane));
    s.name = op.name;
    switch (op.lane) {
      case TimerLane::COMPUTE: s.kind = SliceKind::COMPUTE; break;
      case TimerLane::PP_COMM: s.kind = SliceKind::P2P; break;
      case TimerLane::TP_COMM:
      case TimerLane::DP_COMM:
        s.kind = SliceKind::COLLECTIVE;
        s.op = collective_of(strings.str(op.name));
        break;
    }
    tl.slices.push_back(std::move(s));
    auto [it, fresh] = spans.try_emplace({rank, op.step}, op.start_ns, op.start_ns + op.dur_ns);
    if (!fresh) {
      it->second.first = std::min(it->second.first, op.start_ns);
      it->second.second = std::max(it->second.second, op.start_ns + op.dur_ns);
    }
  }
  for (const auto& [key, span] : spans) workers[key.first].steps.push_back({key.second, span.first, span.second});
  for (auto& [rank, tl] : workers) {
    tl.source = path;
    std::stable_sort(tl.slices.begin(), tl.slices.end(), [](const Slice& a, const Slice& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.stream < b.stream;
    });
    std::sort(tl.steps.begin(), tl.steps.end(),
              [](const StepMarker& a, const StepMarker& b) { return a.start_ns < b.start_ns; });
    assign_steps(tl);
    out.push_back(std::move(tl));
  }
}

}  // namespace detail
}  // namespace ppstream::analyze
