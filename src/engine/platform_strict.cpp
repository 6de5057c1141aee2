// `strict`: the verification semantics — host never blocks, explicit events only, rendezvous
// matching with every op of a batch posted at once, zero durations.
#include "engine/platform.h"

namespace ppstream::engine {
namespace {
class StrictPlatform final : public Platform {
 public:
  PlatformKind kind() const override { return PlatformKind::STRICT; }
  bool host_blocks(const Instr&) const override { return false; }
  BatchMatching batch_matching() const override { return BatchMatching::ALL_AT_ONCE; }
  bool events_enforced() const override { return true; }
  bool timed() const override { return false; }
  CommQueues comm_queues() const override { return CommQueues::PER_COMMUNICATOR; }
};
}  // namespace

const Platform& strict_platform() {
  static const StrictPlatform p;
  return p;
}
}  // namespace ppstream::engine
