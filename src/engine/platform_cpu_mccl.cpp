// `cpu-mccl`: MindSpore on CPU as it really runs a BATCH — `cpu-serial` (streams and events are
// no-ops, every instruction blocks the host, a BATCH's ops one at a time in listed order) with
// MCCL's eager sends: a SEND completes when it is posted, whether or not its RECV is; the RECV
// completes at max(its post, its send's post) (then the batch's transfer time). MCCL
// (MsCollectiveCommLib::Send → CollectiveOpsImpl::Send → AbstractNode::CollectiveSendAsync +
// Wait) sends the whole message to the peer's TCP server thread, which stores it and answers at
// once, whatever the size: there is no eager threshold (docs/semantics.md "Platform profiles").
// A re-simulation profile (docs/whatif.md "Train run directories"); the runtime still verifies
// under cpu-serial, whose rendezvous waits are a superset of these.
#include "engine/platform.h"

namespace ppstream::engine {
namespace {
class CpuMcclPlatform final : public Platform {
 public:
  PlatformKind kind() const override { return PlatformKind::CPU_MCCL; }
  bool host_blocks(const Instr&) const override { return true; }
  BatchMatching batch_matching() const override { return BatchMatching::SERIAL_IN_ORDER; }
  bool events_enforced() const override { return false; }
  bool timed() const override { return true; }
  CommQueues comm_queues() const override { return CommQueues::PER_COMMUNICATOR; }
  bool eager_sends() const override { return true; }
};
}  // namespace

const Platform& cpu_mccl_platform() {
  static const CpuMcclPlatform p;
  return p;
}
}  // namespace ppstream::engine
