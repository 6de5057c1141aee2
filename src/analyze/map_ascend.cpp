// Field map of Ascend trace_view.json (torch_npu and MindSpore) by process lane:
//  - "Ascend Hardware" (one thread per stream): tasks by "Task Type": EVENT_WAIT_SQE (and Notify
//    Wait off the HCCL stream) → stream wait; AI Core / AI Vector / AI CPU / DSA kernels → compute;
//    MEMCPY / PCIE_DMA / SDMA_SQE → memory; EVENT_RECORD / PLACE_HOLDER dropped. A stream running
//    HCCL task types (Notify Wait, Notify Record, SDMA, RDMA, Write Value, …) is an HCCL stream:
//    its tasks are communication, named after the "Group N Communication" op enclosing them.
//  - "HCCL": "Group N Communication" ops (hcom_allReduce_…, hcom_send_…) → collective / P2P of
//    group "Group N"; "Plane N" tasks' src rank / dst rank give the peers of P2P ops.
//  - "CPU OP" (MindSpore on CPU, one thread per executing thread): slices with args.type
//    "HostCpuOps" are ops → compute, except communication ops recognised by name
//    ("Default/AllReduce-op0" → collective; Send / Receive → P2P); scope ranges ("Default",
//    no type) are dropped. MindSpore 2.x on CPU does not profile mint.distributed send/recv.
//  - Older files without process names: tasks carrying "Stream Id"/"Task Type" are hardware tasks
//    and hcom_* tasks communication.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "json_input.h"
#include "mappers.h"

namespace ppstream::analyze::detail {
namespace {

constexpr int64_t kHcclLaneBase = 1'000'000;  // stream ids given to HCCL process lanes
constexpr int64_t kCpuOpBase = 2'000'000;     // and to MindSpore "CPU OP" threads

enum class Lane { HARDWARE, HCCL_GROUP, HCCL_PLANE, CPU_OP, OTHER };

Lane lane_of(const LaneEvent& e, const LaneNames& names) {
  auto p = names.process.find(e.pid);
  if (p == names.process.end()) return (e.stream_id || e.task_type != 0) ? Lane::HARDWARE : Lane::OTHER;
  if (p->second == "Ascend Hardware") return Lane::HARDWARE;
  if (p->second == "CPU OP") return Lane::CPU_OP;
  if (p->second != "HCCL") return Lane::OTHER;
  auto t = names.thread.find({e.pid, e.tid});
  std::string_view tn = t == names.thread.end() ? std::string_view{} : std::string_view(t->second);
  if (istarts_with(tn, "Group")) return Lane::HCCL_GROUP;
  if (istarts_with(tn, "Plane")) return Lane::HCCL_PLANE;
  return Lane::OTHER;
}

bool is_hccl_task(std::string_view task) {
  static constexpr std::array<std::string_view, 9> kHccl = {
      "Notify Wait", "Notify Record", "SDMA", "RDMA", "Write Value", "Reduce Inline", "Reduce TBE",
      "Memcpy", "Local Copy"};
  return std::find(kHccl.begin(), kHccl.end(), task) != kHccl.end();
}

bool is_p2p_name(std::string_view n) {
  return icontains(n, "send") || icontains(n, "receive") || icontains(n, "recv");
}

// MindSpore CPU communication ops (names as in its primitive list) or HCCL ops.
std::optional<SliceKind> comm_kind_by_name(std::string_view n) {
  static constexpr std::array<std::string_view, 9> kColl = {
      "hcom_", "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "AlltoAll", "AllToAll",
      "Barrier", "CollectiveScatter"};
  if (is_p2p_name(n) && (icontains(n, "hcom") || icontains(n, "Send") || icontains(n, "Receive"))) {
    return SliceKind::P2P;
  }
  for (auto c : kColl) {
    if (icontains(n, c)) return SliceKind::COLLECTIVE;
  }
  return std::nullopt;
}

bool iequals(std::string_view a, std::string_view b) { return a.size() == b.size() && istarts_with(a, b); }

// What a communication op does, from its name: HCCL's hcom_<op>_<ids> (hcom_allReduce__868_0_1,
// hcom_reduceScatter_…, hcom_receive_…) or a MindSpore communication primitive, the last scope
// component up to '-' ("Default/AllReduce-op0").
CollectiveOp op_of_name(std::string_view n) {
  static constexpr std::pair<std::string_view, CollectiveOp> kHcom[] = {
      {"allReduce", CollectiveOp::ALL_REDUCE}, {"reduceScatter", CollectiveOp::REDUCE_SCATTER},
      {"reduceScatterV", CollectiveOp::REDUCE_SCATTER}, {"allGather", CollectiveOp::ALL_GATHER},
      {"allGatherV", CollectiveOp::ALL_GATHER}, {"broadcast", CollectiveOp::BROADCAST},
      {"reduce", CollectiveOp::REDUCE}, {"send", CollectiveOp::SEND}, {"receive", CollectiveOp::RECV}};
  static constexpr std::pair<std::string_view, CollectiveOp> kMindSpore[] = {
      {"AllReduce", CollectiveOp::ALL_REDUCE}, {"ReduceScatter", CollectiveOp::REDUCE_SCATTER},
      {"AllGather", CollectiveOp::ALL_GATHER}, {"Broadcast", CollectiveOp::BROADCAST},
      {"Send", CollectiveOp::SEND}, {"Receive", CollectiveOp::RECV}};
  std::string_view word;
  if (istarts_with(n, "hcom_")) {
    word = n.substr(5);
    word = word.substr(0, word.find('_'));
    for (const auto& [w, op] : kHcom) {
      if (iequals(word, w)) return op;
    }
    return CollectiveOp::OTHER;
  }
  const size_t slash = n.rfind('/');
  word = slash == std::string_view::npos ? n : n.substr(slash + 1);
  word = word.substr(0, word.find('-'));
  for (const auto& [w, op] : kMindSpore) {
    if (word == w) return op;
  }
  return CollectiveOp::OTHER;
}

enum class HwClass { DROP, WAIT, COMM, HCCL_TASK, MEMORY, COMPUTE };

HwClass hw_class(std::string_view name, std::string_view task) {
  if (task == "EVENT_RECORD_SQE" || task == "EVENT_RECORD" || task == "PLACE_HOLDER_SQE") return HwClass::DROP;
  if (task == "EVENT_WAIT_SQE" || task == "NOTIFY_WAIT_SQE") return HwClass::WAIT;
  if (istarts_with(name, "hcom_")) return HwClass::COMM;
  if (is_hccl_task(task)) return HwClass::HCCL_TASK;
  if (istarts_with(name, "MEMCPY_ASYNC") || task == "MEMCPY_ASYNC" || task == "PCIE_DMA_SQE" || task == "SDMA_SQE") {
    return HwClass::MEMORY;
  }
  return HwClass::COMPUTE;
}

// A slice of the lane event; communication slices carry the op their name says.
Slice slice_of(const LaneEvent& e, uint32_t stream, SliceKind kind, const StringTable& strings) {
  Slice s;
  s.start_ns = e.ts_ns;
  s.dur_ns = e.dur_ns;
  s.stream = stream;
  s.kind = kind;
  s.name = e.name;
  if (kind == SliceKind::COLLECTIVE || kind == SliceKind::P2P) s.op = op_of_name(strings.str(e.name));
  return s;
}

// Streams running an HCCL task type other than Notify Wait (which a compute stream may run too).
std::set<int64_t> hccl_streams(const std::vector<LaneEvent>& evs, const std::vector<Lane>& lanes,
                               const StringTable& strings) {
  std::set<int64_t> out;
  for (size_t i = 0; i < evs.size(); ++i) {
    const auto& task = strings.str(evs[i].task_type);
    if (lanes[i] == Lane::HARDWARE && is_hccl_task(task) && task != "Notify Wait") {
      out.insert(evs[i].stream_id.value_or(evs[i].tid));
    }
  }
  return out;
}

// Names each HCCL-stream task after the group op whose interval encloses it (ops sorted by start).
void name_hccl_tasks(RankTimeline& tl, const std::vector<size_t>& tasks, std::vector<size_t> ops) {
  std::sort(ops.begin(), ops.end(), [&](size_t a, size_t b) { return tl.slices[a].start_ns < tl.slices[b].start_ns; });
  for (size_t ti : tasks) {
    Slice& t = tl.slices[ti];
    auto it = std::upper_bound(ops.begin(), ops.end(), t.start_ns,
                               [&](int64_t v, size_t o) { return v < tl.slices[o].start_ns; });
    // Ops of several groups may overlap: look back over the ones starting before the task.
    for (int back = 0; it != ops.begin() && back < 8; ++back) {
      const Slice& op = tl.slices[*--it];
      if (op.end_ns() >= t.start_ns) {
        t.name = op.name;
        t.group = op.group;
        t.kind = op.kind;
        t.op = op.op;
        break;
      }
    }
  }
}

// P2P peers of each group op from the Plane tasks inside it: src rank → dst rank.
void add_plane_peers(RankTimeline& tl, const std::vector<size_t>& ops, const std::vector<const LaneEvent*>& planes,
                     Rank rank) {
  for (size_t oi : ops) {
    Slice& op = tl.slices[oi];
    if (op.kind != SliceKind::P2P) continue;
    std::set<std::pair<int, int32_t>> seen;
    for (const LaneEvent* p : planes) {
      if (p->ts_ns < op.start_ns || p->ts_ns > op.end_ns() || !p->src_rank || !p->dst_rank) continue;
      if (*p->src_rank == rank.v && *p->dst_rank != rank.v && seen.insert({0, static_cast<int32_t>(*p->dst_rank)}).second) {
        op.p2p.push_back({P2PDir::SEND, Rank(static_cast<int32_t>(*p->dst_rank)), 0, std::nullopt});
      } else if (*p->dst_rank == rank.v && *p->src_rank != rank.v &&
                 seen.insert({1, static_cast<int32_t>(*p->src_rank)}).second) {
        op.p2p.push_back({P2PDir::RECV, Rank(static_cast<int32_t>(*p->src_rank)), 0, std::nullopt});
      }
    }
  }
}

// Bytes of `count` elements of an Ascend data_type ("FP32", "BF16", "INT8", …); 0 when unknown.
uint64_t ascend_bytes(std::optional<int64_t> count, std::string_view t) {
  if (!count || *count <= 0 || *count > (int64_t{1} << 50)) return 0;
  uint64_t size = 0;
  if (t == "FP32" || t == "INT32" || t == "UINT32") size = 4;
  else if (t == "FP16" || t == "BF16" || t == "INT16" || t == "UINT16") size = 2;
  else if (t == "INT8" || t == "UINT8") size = 1;
  else if (t == "FP64" || t == "INT64" || t == "UINT64") size = 8;
  return static_cast<uint64_t>(*count) * size;
}

}  // namespace

void add_ascend_scan(ScanSpec& spec) {
  spec.args.insert(spec.args.end(),
                   {arg_key("Stream Id", IntArg::STREAM_ID), arg_key("Task Type", StrArg::TASK_TYPE),
                    arg_key("type", StrArg::OP_TYPE), arg_key("data_type", StrArg::DATA_TYPE),
                    arg_key("count", IntArg::COUNT), arg_key("src rank", IntArg::SRC_RANK),
                    arg_key("dst rank", IntArg::DST_RANK)});
  // torch_npu's host-side categories (its cpu_op / python_function / fwdbwd ranges and
  // ProfilerStep# markers are PyTorch's, mapped as Kineto's).
  spec.host_categories.insert(spec.host_categories.end(),
                              {"enqueue", "dequeue", "async_npu", "HostToDevice", "async_task_queue", "Trace"});
}

std::optional<LaneEvent> ascend_lane_event(const RawEvent& ev, StringTable& strings) {
  const auto stream_id = arg(ev, IntArg::STREAM_ID);
  const std::string_view task_type = arg(ev, StrArg::TASK_TYPE);
  if (ev.ph != 'X' || !(ev.cat.empty() || stream_id || !task_type.empty())) return std::nullopt;
  return LaneEvent{ev.index,
                   ev.offset,
                   ev.pid.value_or(0),
                   ev.tid.value_or(0),
                   ev.ts_ns.value_or(0),
                   ev.dur_ns.value_or(0),
                   strings.intern(ev.name),
                   strings.intern(task_type),
                   arg(ev, StrArg::OP_TYPE) == "HostCpuOps",
                   ascend_bytes(arg(ev, IntArg::COUNT), arg(ev, StrArg::DATA_TYPE)),
                   stream_id,
                   arg(ev, IntArg::SRC_RANK),
                   arg(ev, IntArg::DST_RANK)};
}

void map_ascend_lanes(const std::vector<LaneEvent>& evs, const LaneNames& names, Rank rank, StringTable& strings,
                      RankTimeline& tl) {
  std::vector<Lane> lanes(evs.size());
  for (size_t i = 0; i < evs.size(); ++i) lanes[i] = lane_of(evs[i], names);
  const auto hccl = hccl_streams(evs, lanes, strings);
  std::vector<size_t> ops, tasks;
  std::vector<const LaneEvent*> planes;
  for (size_t i = 0; i < evs.size(); ++i) {
    const LaneEvent& e = evs[i];
    const std::string& name = strings.str(e.name);
    switch (lanes[i]) {
      case Lane::HARDWARE: {
        const int64_t sid = e.stream_id.value_or(e.tid);
        const std::string& task = strings.str(e.task_type);
        HwClass c = hw_class(name, task);
        if (c == HwClass::DROP) break;
        if (hccl.count(sid) && c != HwClass::WAIT) c = HwClass::HCCL_TASK;
        if (c == HwClass::HCCL_TASK && !hccl.count(sid)) c = HwClass::WAIT;  // Notify Wait on a compute stream
        const uint32_t st = tl.stream_index(fmt::format("Stream {}", sid), sid);
        SliceKind k = c == HwClass::WAIT      ? SliceKind::STREAM_WAIT
                      : c == HwClass::MEMORY  ? SliceKind::MEMORY
                      : c == HwClass::COMPUTE ? SliceKind::COMPUTE
                      : c == HwClass::COMM    ? (is_p2p_name(name) ? SliceKind::P2P : SliceKind::COLLECTIVE)
                                              : SliceKind::COLLECTIVE;
        tl.slices.push_back(slice_of(e, st, k, strings));
        if (c == HwClass::HCCL_TASK) tasks.push_back(tl.slices.size() - 1);
        break;
      }
      case Lane::HCCL_GROUP: {
        std::string lane = names.thread.at({e.pid, e.tid});
        const uint32_t st = tl.stream_index("HCCL " + lane, kHcclLaneBase + e.tid);
        Slice s = slice_of(e, st, is_p2p_name(name) ? SliceKind::P2P : SliceKind::COLLECTIVE, strings);
        const auto cut = lane.find(" Communication");
        s.group = strings.intern(cut == std::string::npos ? lane : lane.substr(0, cut));
        s.bytes = e.bytes;
        tl.slices.push_back(std::move(s));
        ops.push_back(tl.slices.size() - 1);
        break;
      }
      case Lane::HCCL_PLANE: planes.push_back(&e); break;
      case Lane::CPU_OP: {
        if (!e.cpu_op) break;  // a scope range, not an op
        const uint32_t st = tl.stream_index(fmt::format("CPU OP {}", e.tid), kCpuOpBase + e.tid);
        tl.slices.push_back(slice_of(e, st, comm_kind_by_name(name).value_or(SliceKind::COMPUTE), strings));
        break;
      }
      case Lane::OTHER: break;
    }
  }
  name_hccl_tasks(tl, tasks, ops);
  add_plane_peers(tl, ops, planes, rank);
}

}  // namespace ppstream::analyze::detail
