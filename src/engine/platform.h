// Platform profile: what issuing an instruction implies on one runtime (docs/semantics.md,
// "Platform profiles"). The engine asks only these questions and never names a vendor.
#pragma once

#include <cstdint>

#include "ppstream/engine/engine.h"
#include "ppstream/program/ir.h"

namespace ppstream::engine {

// How the ops of one BATCH are posted.
enum class BatchMatching : uint8_t {
  ALL_AT_ONCE,      // every op is posted when the batch starts (batch_isend_irecv)
  SERIAL_IN_ORDER,  // op j is posted once op j-1 is matched: each a blocking rendezvous
};

// Which device queue a rank's communication runs on. Units on one queue run one after another
// in issue (program) order, across all of the rank's streams: a unit begins only when the
// previous unit on its queue has finished (docs/semantics.md "Communication queues").
enum class CommQueues : uint8_t {
  // One communicator per group (shard, replicate): a collective's phase on a group waits for
  // the rank's previous collective phase there (NCCL, HCCL with one group per member set).
  // P2P: per-channel FIFO only.
  PER_COMMUNICATOR,
  // MindSpore on Ascend, multi_stream:group, with the runtime's CommPlan (a group per (member
  // set, program stream) for collectives, a group per peer pair for P2P): a device stream per
  // group. Collectives from different program streams are on different groups, so independent;
  // a BATCH's ops with one peer (one batch_isend_irecv on the pair's group) wait for the rank's
  // previous ops with that peer, whatever stream issued them.
  PER_GROUP,
  // multi_stream:true: every collective and every BATCH of a rank on one communication stream.
  ONE_PER_RANK,
};

class Platform {
 public:
  virtual ~Platform() = default;
  virtual PlatformKind kind() const = 0;
  // Does issuing `i` block the host until `i` completes?
  virtual bool host_blocks(const Instr& i) const = 0;
  virtual BatchMatching batch_matching() const = 0;
  // Does WAIT wait for its event (false: events are no-ops)?
  virtual bool events_enforced() const = 0;
  // Are durations taken from the cost model (false: every duration and delay is zero)?
  virtual bool timed() const = 0;
  // The rank's communication queues (ALL_AT_ONCE batches only when not PER_COMMUNICATOR).
  virtual CommQueues comm_queues() const = 0;
  // Does a SEND_F / SEND_B complete when it is posted, without waiting for its receive (eager:
  // the message is buffered at the receiver, which matches it once its RECV is posted)? false:
  // every send is a rendezvous with its mirror receive (docs/semantics.md "Platform profiles").
  virtual bool eager_sends() const { return false; }
};

const Platform& strict_platform();
const Platform& ascend_mindspore_platform();
const Platform& cpu_serial_platform();
const Platform& ascend_one_comm_stream_platform();
const Platform& strict_timed_platform();
const Platform& cpu_mccl_platform();
const Platform& platform_for(PlatformKind k);

}  // namespace ppstream::engine
