// Verifier and engine on programs written in the canonical text form (format.h), the way
// lowering output and golden files look.
#include <gtest/gtest.h>

#include "ppstream/engine/engine.h"
#include "ppstream/program/format.h"
#include "ppstream/verify/verify.h"

namespace ppstream {
namespace {

// Async placement on the last stage of a 2-stage pipeline, one microbatch, HSDP replicate 2
// (shard 1: no UNSHARD/RESHARD), non-expanded.
constexpr const char* kAsync = R"(world pp=2 vpp=1 shard=1 replicate=2 expanded=0 mode=hsdp policy=async
r0 compute F mb0 s0
r0 compute RECORD fwd_out[mb0,s0]
r0 p2p WAIT fwd_out[mb0,s0]
r0 p2p BATCH{SEND_F mb0 s0 ->r1}
r0 p2p BATCH{RECV_B mb0 s0 <-r1}
r0 p2p RECORD recv_B[mb0,s0]
r0 compute WAIT recv_B[mb0,s0]
r0 compute B mb0 s0
r0 compute REDUCE_GRAD s0
r0 compute OPT_STEP
r1 p2p BATCH{RECV_F mb0 s1 <-r0}
r1 p2p RECORD recv_F[mb0,s1]
r1 compute WAIT recv_F[mb0,s1]
r1 compute F mb0 s1
r1 compute B mb0 s1
r1 compute RECORD bwd_out[mb0,s1]
r1 compute RECORD compute_ready[s1]
r1 p2p WAIT bwd_out[mb0,s1]
r1 p2p BATCH{SEND_B mb0 s1 ->r0}
r1 reduce WAIT compute_ready[s1]
r1 reduce REDUCE_GRAD s1
r1 reduce RECORD reduce_done[s1]
r1 compute WAIT reduce_done[s1]
r1 compute OPT_STEP
)";

TEST(VerifyText, AsyncPlacementIsValid) {
  const ProgramSet set = parse_program_set(kAsync);
  const auto v = verify(set, {{PlatformKind::STRICT, PlatformKind::CPU_SERIAL}, ""});
  std::string all;
  for (const auto& x : v) all += x.to_string() + "\n";
  EXPECT_TRUE(v.empty()) << all;
}

// The same set with r1's reduction issued on compute before the send (the legacy order).
TEST(VerifyText, LegacyOrderUnderAsyncIsCaught) {
  std::string text = kAsync;
  const std::string legacy_tail = R"(r1 compute B mb0 s1
r1 compute REDUCE_GRAD s1
r1 compute RECORD bwd_out[mb0,s1]
r1 p2p WAIT bwd_out[mb0,s1]
r1 p2p BATCH{SEND_B mb0 s1 ->r0}
r1 compute OPT_STEP
)";
  text = text.substr(0, text.find("r1 compute B mb0 s1")) + legacy_tail;
  const auto v = verify(parse_program_set(text));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].to_string(),
            "verify: r1 #5 compute: [send-before-reduce] REDUCE_GRAD s1 waits for a reduction on compute before "
            "BATCH{SEND_B mb0 s1 ->r0} (#8 p2p), the send of the last backward B mb0 s1 (#4 compute); issue the send "
            "first and wait only before OPT_STEP");
}

// require_verified: silent on a valid set; one VerifyError carrying the violations otherwise.
TEST(VerifyText, RequireVerifiedThrowsOneErrorType) {
  EXPECT_NO_THROW(require_verified(parse_program_set(kAsync), {}, "test"));
  std::string text = kAsync;
  text.erase(text.find("r1 compute RECORD compute_ready[s1]\n"), std::string("r1 compute RECORD compute_ready[s1]\n").size());
  try {
    require_verified(parse_program_set(text), {}, "test: the async programs");
    FAIL() << "a WAIT without its RECORD verified";
  } catch (const VerifyError& e) {
    ASSERT_FALSE(e.violations().empty());
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("test: the async programs: " + std::to_string(e.violations().size()) + " violation(s):", 0), 0u) << what;
    EXPECT_NE(what.find(e.violations().front().to_string()), std::string::npos) << what;
  }
}

// Ascend timings (F=1, B=2, batch 0.5, all-reduce 3 with the slowest outside member 1 ms late):
//   r0 F [0,1]; SEND_F ends 1.5; r1 F [1.5,2.5], B [2.5,4.5]; r1 SEND_B posted 4.5 → 5.0;
//   r1's reduction starts 4.5 (compute_ready fired at 4.5) → 4.5 + 1 + 3 = 8.5; r1 OPT_STEP 8.5.
//   r0 B [5,7]; REDUCE_GRAD on compute: 7 + 1 + 3 = 11; OPT_STEP at 11. Makespan 11.
TEST(EngineText, AsyncReductionOverlapsTheSend) {
  class Cost : public CostModel {
    double compute_ms(const Program&, const Instr& i) const override {
      return i.op == OpKind::F ? 1.0 : i.op == OpKind::B ? 2.0 : 0.0;
    }
    double batch_ms(const Program&, const Instr&) const override { return 0.5; }
    double collective_ms(const Program&, const Instr&) const override { return 3.0; }
    double external_arrival_ms(const Program&, const Instr&) const override { return 1.0; }
  } cost;
  const ProgramSet set = parse_program_set(kAsync);
  const EngineResult r = run_engine(set, {PlatformKind::ASCEND_MINDSPORE, &cost});
  ASSERT_TRUE(r.completed);
  EXPECT_DOUBLE_EQ(r.timing[1][8].end_ms, 5.0);    // r1 SEND_B not delayed by the reduction
  EXPECT_DOUBLE_EQ(r.timing[1][10].end_ms, 8.5);   // r1 REDUCE_GRAD on reduce
  EXPECT_DOUBLE_EQ(r.timing[1][12].start_ms, 8.5); // r1 compute waits reduce_done
  EXPECT_DOUBLE_EQ(r.timing[0][7].end_ms, 7.0);
  EXPECT_DOUBLE_EQ(r.timing[0][8].end_ms, 11.0);
  EXPECT_DOUBLE_EQ(r.makespan_ms, 11.0);
}

}  // namespace
}  // namespace ppstream
