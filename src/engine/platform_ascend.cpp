// `ascend-mindspore`: MindSpore 2.10 on Ascend as the ppstream runtime drives it
// (MS_DEV_RUNTIME_CONF multi_stream:group, a communication group per (member set, program
// stream) and per P2P peer pair): the strict ordering rules with durations from the cost model,
// and a device stream per communication group — a BATCH's ops with one peer run after the
// rank's earlier ops with that peer, whatever program stream issued them (CommQueues::PER_GROUP).
// Lowering has already made Ascend's implicit stream waits explicit RECORD/WAIT pairs;
// CommHandle.wait() occupies the issuing stream, not the host.
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
  CommQueues comm_queues() const override { return CommQueues::PER_GROUP; }
};
}  // namespace

const Platform& ascend_mindspore_platform() {
  static const AscendMindSporePlatform p;
  return p;
}
}  // namespace ppstream::engine
