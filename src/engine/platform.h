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
};

const Platform& strict_platform();
const Platform& ascend_mindspore_platform();
const Platform& cpu_serial_platform();
const Platform& platform_for(PlatformKind k);

}  // namespace ppstream::engine
