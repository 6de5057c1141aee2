// `strict-timed`: strict's ordering rules — host never blocks, explicit events only, every op of
// a batch posted at once, one communicator per group (P2P: per-channel FIFO only) — with
// durations from the cost model. The semantics of a lifted Megatron timeline (docs/whatif.md
// "Lifting as programs"), whose lanes are independent queues; a what-if profile, not one the
// runtime runs.
#include "engine/platform.h"

namespace ppstream::engine {
namespace {
class StrictTimedPlatform final : public Platform {
 public:
  PlatformKind kind() const override { return PlatformKind::STRICT_TIMED; }
  bool host_blocks(const Instr&) const override { return false; }
  BatchMatching batch_matching() const override { return BatchMatching::ALL_AT_ONCE; }
  bool events_enforced() const override { return true; }
  bool timed() const override { return true; }
  CommQueues comm_queues() const override { return CommQueues::PER_COMMUNICATOR; }
};
}  // namespace

const Platform& strict_timed_platform() {
  static const StrictTimedPlatform p;
  return p;
}
}  // namespace ppstream::engine
