// Field map of PyTorch Kineto traces: device events carry args.stream; NCCL kernels are
// recognised by name like Holistic Trace Analysis does (`^nccl.*Kernel`).
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <utility>

#include "json_input.h"
#include "mappers.h"

namespace ppstream::analyze::detail {
namespace {

uint64_t dtype_bytes(std::string_view dtype) {
  if (dtype == "Float" || dtype == "Int" || dtype == "float" || dtype == "int32") return 4;
  if (dtype == "Double" || dtype == "Long" || dtype == "int64") return 8;
  if (dtype == "Half" || dtype == "BFloat16" || dtype == "bfloat16" || dtype == "half") return 2;
  if (dtype == "Byte" || dtype == "Char" || dtype == "Bool" || dtype == "int8" || dtype == "uint8") return 1;
  return 0;
}

bool is_nccl_kernel(std::string_view name) {
  return name.substr(0, 4) == "nccl" && name.find("Kernel") != std::string_view::npos;
}

// ncclKernel_SendRecv_…, ncclDevKernel_Send…, or Collective name send/recv.
bool is_p2p(std::string_view name, std::string_view collective) {
  if (collective == "send" || collective == "recv" || collective == "sendrecv") return true;
  auto k = name.find("Kernel_");
  if (k == std::string_view::npos) return false;
  auto rest = name.substr(k + 7);
  return rest.substr(0, 4) == "Send" || rest.substr(0, 4) == "Recv";
}

// PyTorch's record_param_comms "Collective name" ("allreduce", "_reduce_scatter_base",
// "all_gather_into_tensor_coalesced", "send", …), compared without '_' and case.
CollectiveOp op_of_collective_name(std::string_view name) {
  std::string w;
  for (char c : name) {
    if (c != '_') w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (w.starts_with("allreduce")) return CollectiveOp::ALL_REDUCE;
  if (w.starts_with("reducescatter")) return CollectiveOp::REDUCE_SCATTER;
  if (w.starts_with("allgather")) return CollectiveOp::ALL_GATHER;
  if (w.starts_with("broadcast")) return CollectiveOp::BROADCAST;
  if (w == "reduce") return CollectiveOp::REDUCE;
  if (w == "send") return CollectiveOp::SEND;
  if (w == "recv") return CollectiveOp::RECV;
  return CollectiveOp::OTHER;
}

// NCCL kernel names: the op is the word after "ncclKernel_" (NCCL 2.8–2.18,
// ncclKernel_AllReduce_RING_LL_Sum_float), "ncclDevKernel_" (2.19+,
// ncclDevKernel_ReduceScatter_Sum_f32_RING_LL) or "nccl" (older, ncclAllReduceRingLLKernel_sum_f32).
// ncclDevKernel_Generic names none.
CollectiveOp op_of_nccl_kernel(std::string_view name) {
  static constexpr std::pair<std::string_view, CollectiveOp> kOps[] = {
      {"AllReduce", CollectiveOp::ALL_REDUCE}, {"ReduceScatter", CollectiveOp::REDUCE_SCATTER},
      {"AllGather", CollectiveOp::ALL_GATHER}, {"Broadcast", CollectiveOp::BROADCAST},
      {"SendRecv", CollectiveOp::OTHER},       {"Send", CollectiveOp::SEND},
      {"Recv", CollectiveOp::RECV},            {"Reduce", CollectiveOp::REDUCE}};  // after ReduceScatter
  std::string_view rest = name.substr(4);  // after "nccl"
  for (std::string_view prefix : {"Kernel_", "DevKernel_"}) {
    if (rest.starts_with(prefix)) rest.remove_prefix(prefix.size());
  }
  for (const auto& [word, op] : kOps) {
    if (rest.starts_with(word)) return op;
  }
  return CollectiveOp::OTHER;
}

constexpr std::string_view kStepPrefix = "ProfilerStep#";

bool launch_category(std::string_view cat) { return cat == "cuda_runtime" || cat == "cuda_driver"; }

}  // namespace

void add_kineto_scan(ScanSpec& spec) {
  spec.args.insert(spec.args.end(),
                   {arg_key("stream", IntArg::STREAM), arg_key("Collective name", StrArg::COLLECTIVE),
                    arg_key("Process Group Name", StrArg::PG_NAME),
                    arg_key("Process Group Description", StrArg::PG_DESC), arg_key("dtype", StrArg::DTYPE),
                    arg_key("In msg nelems", IntArg::IN_NELEMS), arg_key("Src Rank", IntArg::SRC_RANK),
                    arg_key("Dst Rank", IntArg::DST_RANK), arg_key("correlation", IntArg::CORRELATION),
                    arg_key("device", IntArg::DEVICE), arg_key("wait_on_stream", IntArg::WAIT_ON_STREAM),
                    arg_key("wait_on_cuda_event_record_corr_id", IntArg::WAIT_RECORD_CORR)});
  // Host-side categories: ops, Python frames, flow arrows. ProfilerStep# markers are cpu_op /
  // user_annotation ranges every reader wants; launches carry the correlation of their kernel.
  spec.host_categories.insert(spec.host_categories.end(),
                              {"cpu_op", "cuda_runtime", "cuda_driver", "python_function", "fwdbwd", "ac2g"});
  spec.kept_prefixes.push_back(kStepPrefix);
  spec.link_categories.insert(spec.link_categories.end(), {"cuda_runtime", "cuda_driver"});
  spec.link = arg_key("correlation", IntArg::CORRELATION);
  spec.top_keys.insert(spec.top_keys.end(), {"distributedInfo", "baseTimeNanoseconds"});
}

void read_kineto_top(const std::string& path, const TopValue& value, KinetoTop& top) {
  if (value.key == "baseTimeNanoseconds") {
    std::string_view text = value.json;
    while (!text.empty() && (text.front() == ' ' || text.front() == '"')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '"' || text.back() == '\n')) text.remove_suffix(1);
    int64_t ns = 0;
    auto r = std::from_chars(text.data(), text.data() + text.size(), ns);
    if (r.ec != std::errc{} || r.ptr != text.data() + text.size() || ns < 0 || ns > kMaxAbsTsNs)
      throw TraceError(fmt::format("{}: byte {}: baseTimeNanoseconds {} is not a time; expected an integer of ns "
                                   "in [0, {:.0e}]",
                                   path, value.offset, value.json, static_cast<double>(kMaxAbsTsNs)));
    top.base_ns = ns;
    return;
  }
  if (value.key != "distributedInfo") return;
  read_top_object(path, value, [&](simdjson::ondemand::object obj) {
    for (auto f : obj) {
      const std::string_view k = f.unescaped_key();  // throws on malformed JSON
      if (k == "rank") top.rank = as_int(f.value());
    }
  });
}

std::optional<int64_t> kineto_launch(const RawEvent& ev) {
  if (!launch_category(ev.cat)) return std::nullopt;
  return arg(ev, IntArg::CORRELATION);
}

std::string kineto_stream_name(int64_t stream) { return fmt::format("stream {}", stream); }

std::optional<int64_t> profiler_step(std::string_view name) {
  if (!name.starts_with(kStepPrefix)) return std::nullopt;
  auto digits = name.substr(kStepPrefix.size());
  int64_t step = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (r.ec != std::errc{} || r.ptr != digits.data() + digits.size()) return std::nullopt;
  return step;
}

std::optional<Draft> map_kineto(const RawEvent& ev) {
  if (ev.ph != 'X') return std::nullopt;
  Draft d;
  if (ev.cat == "user_annotation" || ev.cat == "cpu_op") {
    if (auto step = profiler_step(ev.name)) {
      d.step = step;
      return d;
    }
    return std::nullopt;
  }
  bool device = ev.cat == "kernel" || ev.cat == "gpu_memcpy" || ev.cat == "gpu_memset" ||
                ev.cat == "cuda_sync";
  if (!device) return std::nullopt;
  // CUPTI and roctracer write correlation 0 for "none" (ROCm/roctracer#100: every collective
  // kernel); such work is placed by time like work without a correlation.
  if (const auto corr = arg(ev, IntArg::CORRELATION); corr && *corr > 0) d.correlation = corr;
  else d.no_correlation = corr.has_value();
  d.device = arg(ev, IntArg::DEVICE);
  if (!d.device) d.device = ev.pid;
  int64_t stream = arg(ev, IntArg::STREAM).value_or(-1);
  // Only "Stream Wait Event" makes a device stream wait; Stream/Event/Context Sync
  // (cudaStreamSynchronize…) block the host, even when they name the stream they wait for.
  if (stream < 0 || (ev.cat == "cuda_sync" && ev.name != "Stream Wait Event")) {
    if (ev.cat != "cuda_sync") return std::nullopt;
    d.kind = SliceKind::HOST;  // Event/Context/Stream Sync: the host blocks
    d.stream_id = -1;
    d.stream_name = "host sync";
    return d;
  }
  d.stream_id = stream;
  d.stream_name = kineto_stream_name(stream);
  if (ev.cat == "gpu_memcpy" || ev.cat == "gpu_memset") {
    d.kind = SliceKind::MEMORY;
  } else if (ev.cat == "cuda_sync") {
    d.kind = SliceKind::STREAM_WAIT;  // "Stream Wait Event": this stream waits another's event
    // -1 when Kineto could not resolve the record (kineto PR #1318); then timing decides.
    if (const auto src = arg(ev, IntArg::WAIT_ON_STREAM); src && *src >= 0) {
      d.wait_on_stream = src;
      if (const auto rc = arg(ev, IntArg::WAIT_RECORD_CORR); rc && *rc > 0) d.wait_record_corr = rc;
    }
  } else if (is_nccl_kernel(ev.name)) {
    const std::string_view collective = arg(ev, StrArg::COLLECTIVE), pg_name = arg(ev, StrArg::PG_NAME);
    d.kind = is_p2p(ev.name, collective) ? SliceKind::P2P : SliceKind::COLLECTIVE;
    d.op = op_of_collective_name(collective);  // the args name it when present; else the kernel
    if (d.op == CollectiveOp::OTHER) d.op = op_of_nccl_kernel(ev.name);
    d.group = std::string(!pg_name.empty() ? pg_name : arg(ev, StrArg::PG_DESC));
    if (const auto n = arg(ev, IntArg::IN_NELEMS); n && *n > 0) {
      d.bytes = static_cast<uint64_t>(*n) * dtype_bytes(arg(ev, StrArg::DTYPE));
    }
    const auto src = arg(ev, IntArg::SRC_RANK), dst = arg(ev, IntArg::DST_RANK);
    if (collective == "send" && dst) {
      d.p2p.push_back({P2PDir::SEND, Rank(static_cast<int32_t>(*dst)), 0, std::nullopt});
    } else if (collective == "recv" && src) {
      d.p2p.push_back({P2PDir::RECV, Rank(static_cast<int32_t>(*src)), 0, std::nullopt});
    }
  } else {
    d.kind = SliceKind::COMPUTE;
  }
  return d;
}

}  // namespace ppstream::analyze::detail
