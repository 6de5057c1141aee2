// Platform names and the lookup from PlatformKind to its profile.
#include "engine/platform.h"

#include <array>
#include <stdexcept>
#include <string>

namespace ppstream {
namespace {
constexpr std::array<const char*, 6> kNames = {"strict",       "ascend-mindspore", "cpu-serial",
                                              "ascend-mindspore-one-comm-stream", "strict-timed", "cpu-mccl"};
}  // namespace

const char* to_string(PlatformKind k) { return kNames[static_cast<size_t>(k)]; }

std::optional<PlatformKind> parse_platform(const std::string& s) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (s == kNames[i]) return static_cast<PlatformKind>(i);
  return std::nullopt;
}

std::string platform_names() {
  std::string out;
  for (const char* n : kNames) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

std::vector<PlatformKind> parse_platform_list(const std::string& text) {
  if (text == "all") return {PlatformKind::STRICT, PlatformKind::ASCEND_MINDSPORE, PlatformKind::CPU_SERIAL};
  std::vector<PlatformKind> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto k = parse_platform(item);
    if (!k) throw std::invalid_argument("platform '" + item + "': expected " + platform_names() + " or all");
    out.push_back(*k);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

namespace engine {
const Platform& platform_for(PlatformKind k) {
  switch (k) {
    case PlatformKind::STRICT: return strict_platform();
    case PlatformKind::ASCEND_MINDSPORE: return ascend_mindspore_platform();
    case PlatformKind::CPU_SERIAL: return cpu_serial_platform();
    case PlatformKind::ASCEND_ONE_COMM_STREAM: return ascend_one_comm_stream_platform();
    case PlatformKind::STRICT_TIMED: return strict_timed_platform();
    case PlatformKind::CPU_MCCL: return cpu_mccl_platform();
  }
  return strict_platform();
}
}  // namespace engine
}  // namespace ppstream
