// `cpu-mccl` (src/engine/platform_cpu_mccl.cpp): cpu-serial with eager sends. Timings derived by
// hand in the comments (docs/semantics.md "Platform profiles"), never read back from the engine.
#include <gtest/gtest.h>

#include "ppstream/engine/engine.h"
#include "program_builder.h"

namespace ppstream {
namespace {

using testing::recv_b;
using testing::recv_f;
using testing::send_b;
using testing::send_f;
using testing::SetBuilder;

// F = 1 ms, every batch 0.5 ms (its transfer, after its last match).
class Cost : public CostModel {
 public:
  double compute_ms(const Program&, const Instr& i) const override { return i.op == OpKind::F ? 1.0 : 0.0; }
  double batch_ms(const Program&, const Instr&) const override { return 0.5; }
};

World two_ranks() {
  World w;
  w.pp = 2;
  return w;
}

// r0 sends mb0 at 1 and has two more forwards; r1 posts the receive only after 2 ms of its own
// work.
//   cpu-mccl: r0's SEND_F posted at 1 is matched at 1 (eager) and ends 1.5; r0's forwards
//     [1.5, 2.5], [2.5, 3.5]. r1: F [0, 1], [1, 2], RECV_F posted 2, matched max(2, 1) = 2,
//     ends 2.5; F mb0 [2.5, 3.5]. Makespan 3.5.
//   cpu-serial: the SEND_F is a rendezvous, matched at max(1, 2) = 2, ends 2.5; r0's forwards
//     [2.5, 3.5], [3.5, 4.5]. Makespan 4.5.
ProgramSet send_before_receive() {
  return SetBuilder(two_ranks())
      .r(0)
      .F(0, 0)                    // #0
      .batch({send_f(0, 0, 1)})   // #1
      .F(1, 0)                    // #2
      .F(2, 0)                    // #3
      .r(1)
      .F(1, 1)                    // #0
      .F(2, 1)                    // #1
      .batch({recv_f(0, 1, 0)})   // #2
      .F(0, 1)                    // #3
      .build();
}

TEST(CpuMccl, SendCompletesBeforeItsReceiveIsPosted) {
  Cost cost;
  const EngineResult r = run_engine(send_before_receive(), {PlatformKind::CPU_MCCL, &cost});
  ASSERT_TRUE(r.completed);
  EXPECT_DOUBLE_EQ(r.timing[0][1].start_ms, 1.0);
  EXPECT_DOUBLE_EQ(r.timing[0][1].end_ms, 1.5);
  EXPECT_DOUBLE_EQ(r.timing[0][3].end_ms, 3.5);
  EXPECT_DOUBLE_EQ(r.timing[1][2].start_ms, 2.0);
  EXPECT_DOUBLE_EQ(r.timing[1][2].end_ms, 2.5);
  EXPECT_DOUBLE_EQ(r.timing[1][3].end_ms, 3.5);
  EXPECT_DOUBLE_EQ(r.makespan_ms, 3.5);

  const EngineResult serial = run_engine(send_before_receive(), {PlatformKind::CPU_SERIAL, &cost});
  ASSERT_TRUE(serial.completed);
  EXPECT_DOUBLE_EQ(serial.timing[0][1].end_ms, 2.5);
  EXPECT_DOUBLE_EQ(serial.makespan_ms, 4.5);
}

// A receive posted first waits for its send: r1 posts RECV_F at 0, r0 sends at 1 (after F): the
// receive is matched at max(0, 1) = 1 and ends 1.5, as under cpu-serial. In a serial batch the
// op after an eager send is posted at the send's post: r0's BATCH{SEND_F; RECV_B} posts RECV_B at
// 1; r1's SEND_B (after F mb0 [1.5, 2.5]) is posted 2.5, so RECV_B is matched at 2.5, r0's batch
// ends 3.0.
TEST(CpuMccl, ReceivePostedFirstWaitsForItsSend) {
  const ProgramSet set = SetBuilder(two_ranks())
                             .r(0)
                             .F(0, 0)                                      // #0 [0, 1]
                             .batch({send_f(0, 0, 1), recv_b(0, 0, 1)})    // #1 [1, 3]
                             .r(1)
                             .batch({recv_f(0, 1, 0)})                     // #0 [0, 1.5]
                             .F(0, 1)                                      // #1 [1.5, 2.5]
                             .batch({send_b(0, 1, 0)})                     // #2 [2.5, 3]
                             .build();
  Cost cost;
  const EngineResult r = run_engine(set, {PlatformKind::CPU_MCCL, &cost});
  ASSERT_TRUE(r.completed);
  EXPECT_DOUBLE_EQ(r.timing[1][0].end_ms, 1.5);
  EXPECT_DOUBLE_EQ(r.timing[1][1].start_ms, 1.5);
  EXPECT_DOUBLE_EQ(r.timing[1][2].end_ms, 3.0);
  EXPECT_DOUBLE_EQ(r.timing[0][1].start_ms, 1.0);
  EXPECT_DOUBLE_EQ(r.timing[0][1].end_ms, 3.0);
}

// Both ranks send first, then receive, in one serial batch: a cycle of rendezvous under
// cpu-serial (each send waits for a receive posted only after the peer's send), fine with eager
// sends. So cpu-mccl accepts strictly more programs than cpu-serial: a set verified under
// cpu-serial runs under cpu-mccl (it only removes waits), not the other way round.
TEST(CpuMccl, SendFirstOnBothSidesDeadlocksOnlyUnderRendezvous) {
  const ProgramSet set = SetBuilder(two_ranks())
                             .r(0)
                             .batch({send_f(0, 0, 1), recv_b(0, 0, 1)})
                             .r(1)
                             .batch({send_b(0, 1, 0), recv_f(0, 1, 0)})
                             .build();
  EXPECT_FALSE(run_engine(set, {PlatformKind::CPU_SERIAL, nullptr}).completed);
  const EngineResult r = run_engine(set, {PlatformKind::CPU_MCCL, nullptr});
  EXPECT_TRUE(r.completed) << format_deadlock(set, r);
  // A receive still needs its send: receiving first on both sides deadlocks under both.
  const ProgramSet recv_first = SetBuilder(two_ranks())
                                    .r(0)
                                    .batch({recv_b(0, 0, 1), send_f(0, 0, 1)})
                                    .r(1)
                                    .batch({recv_f(0, 1, 0), send_b(0, 1, 0)})
                                    .build();
  const EngineResult d = run_engine(recv_first, {PlatformKind::CPU_MCCL, nullptr});
  ASSERT_FALSE(d.completed);
  EXPECT_EQ(d.cycle, (std::vector<Rank>{Rank{0}, Rank{1}}));
}

TEST(CpuMccl, NameRoundTrips) {
  EXPECT_EQ(parse_platform("cpu-mccl"), PlatformKind::CPU_MCCL);
  EXPECT_STREQ(to_string(PlatformKind::CPU_MCCL), "cpu-mccl");
}

}  // namespace
}  // namespace ppstream
