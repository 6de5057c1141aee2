// `ascend-mindspore-one-comm-stream`: MindSpore on Ascend with MS_DEV_RUNTIME_CONF
// multi_stream:true — `ascend-mindspore` except that every collective and every BATCH of a rank
// runs on one communication stream, in issue order. A reduction issued before a later send
// then holds that send back (the send-first fix undone). The runtime refuses this mode; the
// profile lets `simulate --platform` show what it would cost (docs/semantics.md).
#include "engine/platform.h"

namespace ppstream::engine {
namespace {
class AscendOneCommStreamPlatform final : public Platform {
 public:
  PlatformKind kind() const override { return PlatformKind::ASCEND_ONE_COMM_STREAM; }
  bool host_blocks(const Instr&) const override { return false; }
  BatchMatching batch_matching() const override { return BatchMatching::ALL_AT_ONCE; }
  bool events_enforced() const override { return true; }
  bool timed() const override { return true; }
  CommQueues comm_queues() const override { return CommQueues::ONE_PER_RANK; }
};
}  // namespace

const Platform& ascend_one_comm_stream_platform() {
  static const AscendOneCommStreamPlatform p;
  return p;
}
}  // namespace ppstream::engine
