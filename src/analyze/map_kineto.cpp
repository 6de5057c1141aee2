// Field map of PyTorch Kineto traces: device events carry args.stream; NCCL kernels are
// recognised by name like Holistic Trace Analysis does (`^nccl.*Kernel`).
#include <fmt/format.h>

#include <charconv>

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

}  // namespace

std::optional<int64_t> profiler_step(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  auto digits = name.substr(kPrefix.size());
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
  d.correlation = ev.args.correlation;
  int64_t stream = ev.args.stream.value_or(-1);
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
  d.stream_name = fmt::format("stream {}", stream);
  if (ev.cat == "gpu_memcpy" || ev.cat == "gpu_memset") {
    d.kind = SliceKind::MEMORY;
  } else if (ev.cat == "cuda_sync") {
    d.kind = SliceKind::STREAM_WAIT;  // "Stream Wait Event": this stream waits another's event
  } else if (is_nccl_kernel(ev.name)) {
    d.kind = is_p2p(ev.name, ev.args.collective) ? SliceKind::P2P : SliceKind::COLLECTIVE;
    d.group = std::string(!ev.args.pg_name.empty() ? ev.args.pg_name : ev.args.pg_desc);
    if (ev.args.in_nelems && *ev.args.in_nelems > 0) {
      d.bytes = static_cast<uint64_t>(*ev.args.in_nelems) * dtype_bytes(ev.args.dtype);
    }
    if (ev.args.collective == "send" && ev.args.dst_rank) {
      d.p2p.push_back({P2PDir::SEND, Rank(static_cast<int32_t>(*ev.args.dst_rank)), 0, std::nullopt});
    } else if (ev.args.collective == "recv" && ev.args.src_rank) {
      d.p2p.push_back({P2PDir::RECV, Rank(static_cast<int32_t>(*ev.args.src_rank)), 0, std::nullopt});
    }
  } else {
    d.kind = SliceKind::COMPUTE;
  }
  return d;
}

}  // namespace ppstream::analyze::detail
