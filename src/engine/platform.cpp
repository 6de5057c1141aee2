// Platform names and the lookup from PlatformKind to its profile.
#include "engine/platform.h"

#include <array>
#include <string>

namespace ppstream {
namespace {
constexpr std::array<const char*, 3> kNames = {"strict", "ascend-mindspore", "cpu-serial"};
}  // namespace

const char* to_string(PlatformKind k) { return kNames[static_cast<size_t>(k)]; }

std::optional<PlatformKind> parse_platform(const std::string& s) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (s == kNames[i]) return static_cast<PlatformKind>(i);
  return std::nullopt;
}

namespace engine {
const Platform& platform_for(PlatformKind k) {
  switch (k) {
    case PlatformKind::STRICT: return strict_platform();
    case PlatformKind::ASCEND_MINDSPORE: return ascend_mindspore_platform();
    case PlatformKind::CPU_SERIAL: return cpu_serial_platform();
  }
  return strict_platform();
}
}  // namespace engine
}  // namespace ppstream
