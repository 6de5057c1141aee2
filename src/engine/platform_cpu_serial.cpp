// `cpu-serial`: MindSpore on CPU — streams and events are no-ops, every instruction blocks
// the host until it completes, and a BATCH runs its ops one at a time in listed order, each
// a blocking rendezvous with its mirror op.
#include "engine/platform.h"

namespace ppstream::engine {
namespace {
class CpuSerialPlatform final : public Platform {
 public:
  PlatformKind kind() const override { return PlatformKind::CPU_SERIAL; }
  bool host_blocks(const Instr&) const override { return true; }
  BatchMatching batch_matching() const override { return BatchMatching::SERIAL_IN_ORDER; }
  bool events_enforced() const override { return false; }
  bool timed() const override { return true; }
  CommQueues comm_queues() const override { return CommQueues::PER_COMMUNICATOR; }
};
}  // namespace

const Platform& cpu_serial_platform() {
  static const CpuSerialPlatform p;
  return p;
}
}  // namespace ppstream::engine
