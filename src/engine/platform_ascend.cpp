// `ascend-mindspore`: the strict ordering rules with durations from the cost model. Lowering
// has already made Ascend's implicit stream waits explicit RECORD/WAIT pairs, so only time
// differs from `strict`; CommHandle.wait() occupies the issuing stream, not the host.
#include "engine/platform.h"

namespace ppstream::engine {
namespace {
class AscendMindSporePlatform final : public Platform {
 public:
  PlatformKind kind() const override { return PlatformKind::ASCEND_MINDSPORE; }
  bool host_blocks(const Instr&) const override { return false; }
  BatchMatching batch_matching() const override { return BatchMatching::ALL_AT_ONCE; }
  bool events_enforced() const override { return true; }
  bool timed() const override { return true; }
};
}  // namespace

const Platform& ascend_mindspore_platform() {
  static const AscendMindSporePlatform p;
  return p;
}
}  // namespace ppstream::engine
