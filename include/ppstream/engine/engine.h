// The discrete-event engine: one execution of a ProgramSet across all ranks, under a platform
// profile and a cost model. Verify and simulate are both runs of this engine (docs/semantics.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ppstream/program/ir.h"

namespace ppstream {

// ASCEND_ONE_COMM_STREAM is `ascend-mindspore-one-comm-stream`: MindSpore's
// MS_DEV_RUNTIME_CONF multi_stream:true, a what-if profile for `simulate` (the runtime refuses
// that mode); STRICT_TIMED is `strict-timed`: strict's ordering rules with the cost model's
// durations (a lifted Megatron timeline's semantics, docs/whatif.md); CPU_MCCL is `cpu-mccl`:
// cpu-serial with MCCL's eager sends (what MindSpore's CPU runtime really does; the what-if of a
// CPU train run re-simulates under it); docs/semantics.md "Platform profiles".
enum class PlatformKind : uint8_t { STRICT, ASCEND_MINDSPORE, CPU_SERIAL, ASCEND_ONE_COMM_STREAM, STRICT_TIMED, CPU_MCCL };
const char* to_string(PlatformKind k);
// "strict", "ascend-mindspore", "cpu-serial", "ascend-mindspore-one-comm-stream", "strict-timed",
// "cpu-mccl"
std::optional<PlatformKind> parse_platform(const std::string& s);
// Every profile name, comma-separated (for messages).
std::string platform_names();
// "strict,cpu-serial" or "all" (the three verification profiles: strict, ascend-mindspore,
// cpu-serial) → platforms; throws std::invalid_argument naming the bad entry.
std::vector<PlatformKind> parse_platform_list(const std::string& text);

// Durations and arrival delays in milliseconds. The default (this base class) is zero cost:
// the `strict` verification semantics.
class CostModel {
 public:
  virtual ~CostModel() = default;
  // Execution time of a compute / RESHARD / OPT_STEP instruction once started.
  virtual double compute_ms(const Program& /*p*/, const Instr& /*i*/) const { return 0.0; }
  // Transfer time of a BATCH once all its ops are matched.
  virtual double batch_ms(const Program& /*p*/, const Instr& /*i*/) const { return 0.0; }
  // Time of one collective (UNSHARD or REDUCE_GRAD) once its last member has arrived,
  // excluding straggler delays.
  virtual double collective_ms(const Program& /*p*/, const Instr& /*i*/) const { return 0.0; }
  // Extra arrival delay of this rank at this collective (straggler model). For members
  // outside a non-expanded set, the engine asks `external_arrival_ms` for the slowest of them.
  virtual double arrival_delay_ms(const Program& /*p*/, const Instr& /*i*/) const { return 0.0; }
  virtual double external_arrival_ms(const Program& /*p*/, const Instr& /*i*/) const { return 0.0; }
  // Host time to issue this instruction: the host issues in program order, each instruction
  // this long after the previous one was issued (the first one this long after step start;
  // after a host-blocking instruction, this long after it completed). An instruction cannot be
  // ready on its stream before it is issued, so a slow host delays the device (docs/semantics.md
  // "Host issue time").
  virtual double host_issue_ms(const Program& /*p*/, const Instr& /*i*/) const { return 0.0; }
  // Launch delay of this instruction: it starts this long after its start condition holds
  // (issued, at the head of its stream — its stream predecessor ended —, and for a WAIT its
  // event recorded), not in program order from the previous issue as host_issue_ms. Compute
  // then ends compute_ms after that start, a BATCH posts its ops then, a collective arrives then
  // (plus arrival_delay_ms). The stream is occupied meanwhile. For a lifted trace this is the
  // start gap no dependency explains (docs/whatif.md "Lifting"; docs/semantics.md "Launch delay").
  virtual double launch_delay_ms(const Program& /*p*/, const Instr& /*i*/) const { return 0.0; }
};

// "Not yet" in the engine's time tables: kNotYet, asked through happened() (times are ms from
// step start, so >= 0). A double with a named constant rather than std::optional<double>: these
// tables hold a row per instruction (or P2P op), and four optionals make InstrTiming's 32-byte
// row 64 bytes. Measured on `ppstream simulate examples/seed-300b-moe.yaml --set
// micro_batch_num=65536` (Release, /usr/bin/time -f "%M KB %e s", 3 runs each, 2-core machine):
// doubles 1,589,852-1,589,980 KB peak RSS, 7.05-7.26 s; the row padded to the size of four
// std::optional<double> (a stand-in: same layout, without the has_value checks) 1,772,020-
// 1,772,128 KB (+182 MB, +11.5 %), 7.38-7.52 s (+3 %). Over the 5 % budget, so the doubles stay.
inline constexpr double kNotYet = -1.0;
constexpr bool happened(double t) { return t >= 0; }

// What one instruction did (times in ms from step start; kNotYet until it happens). An
// instruction that never started (a deadlock) has started() false and EngineResult::blocked
// says why; read a time only once its step happened.
struct InstrTiming {
  double issue_ms = kNotYet;  // host issued it
  double ready_ms = kNotYet;  // reached the head of its stream
  double start_ms = kNotYet;  // start condition held (WAIT: event fired; BATCH/collective: posted)
  double end_ms = kNotYet;    // completed
  bool issued() const { return happened(issue_ms); }
  bool at_head() const { return happened(ready_ms); }
  bool started() const { return happened(start_ms); }
  bool finished() const { return happened(end_ms); }
};

// One blocked instruction at a deadlock: rank, stream, index, its canonical text and what it
// is waiting for (e.g. "event compute_ready[s7] never recorded", "peer r2 has not posted RECV_B mb15 s6").
struct Blocked {
  Rank rank;
  std::string stream;
  int32_t index = 0;
  std::string text;
  std::string waiting_for;
  std::optional<Rank> waits_on_rank;  // for the waiting cycle
  std::optional<int32_t> waits_on;    // index in EngineResult::blocked of the head it waits on
};

struct EngineResult {
  bool completed = false;                         // every instruction of every rank completed
  std::vector<std::vector<InstrTiming>> timing;   // [program index][instr index]
  std::vector<Blocked> blocked;                   // heads of blocked streams when !completed
  std::vector<Rank> cycle;                        // a waiting cycle among blocked ranks, if any
  std::vector<int32_t> cycle_blocked;             // the same cycle as indices into `blocked`
                                                  // ((rank, stream) heads; a rank may recur)
  double makespan_ms = 0.0;
  int64_t events_processed = 0;                   // engine events (for throughput benchmarks)
};

struct EngineOptions {
  PlatformKind platform = PlatformKind::STRICT;
  const CostModel* cost = nullptr;  // nullptr: zero cost
};

// How the run models time (details: docs/semantics.md "Execution"):
// - Per rank a host issues in program order (host_issue_ms apart, from t=0, unless the platform
//   blocks it), an instruction is ready at the later of its issue and its stream predecessor's
//   end, starts launch_delay_ms after its start condition holds (ready; a WAIT: and its event
//   recorded), each stream runs FIFO, and only completions are queued, ordered by (time, rank, stream name,
//   instruction index) — identical input gives identical timings.
// - P2P: the k-th op of a channel (sender, receiver, F|B) pairs with the k-th op of the
//   opposite side, by position only (content is the verifier's p2p-fifo rule). A BATCH ends at
//   max(post time of every op's mirror, its own start) + batch_ms.
// - Collectives: in an expanded set, UNSHARD is one all-gather in the shard group; REDUCE_GRAD
//   is a reduce-scatter in the shard group (skipped when shard == 1) followed by an all-reduce
//   in the replicate group (skipped when replicate == 1) — two collectives in sequence, each
//   matched by its k-th occurrence in its group and ending when its last member arrives
//   (start + arrival_delay_ms for the first phase, the first phase's end for the second);
//   collective_ms is added once, after the last phase. In a non-expanded set a collective ends
//   at start + max(arrival_delay_ms, external_arrival_ms) + collective_ms. The issuing stream
//   is occupied until then.
// - Communication order across a rank's streams is the profile's (src/engine/platform.h
//   CommQueues): one communicator per group (strict, cpu-serial), a device stream per
//   communication group as MindSpore's runtime sets them up on Ascend (ascend-mindspore), or one
//   communication stream per rank (ascend-mindspore-one-comm-stream).
// - `strict` ignores the cost model (every duration is zero).
// Runs one step. Never throws on a deadlock (it is reported in the result); throws
// std::invalid_argument for structurally broken input (unknown peer rank, etc.) and for a cost
// model value that is negative or not finite (the message names rank, index and instruction).
EngineResult run_engine(const ProgramSet& set, const EngineOptions& opts = {});

// Human-readable deadlock report: every blocked instruction, then the cycle.
std::string format_deadlock(const ProgramSet& set, const EngineResult& r);

}  // namespace ppstream
