// Lowering: the seed's reduction tail under both policies, policy-independence of P2P, transports,
// FSDP ownership, and whole programs for a tiny case compared as text.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "ppstream/config/config.h"
#include "ppstream/lower/lower.h"
#include "ppstream/program/format.h"

namespace ppstream {
namespace {

PipelineConfig seed_config(ReducePolicy policy) {
  return load_config_text(R"(
pipeline_parallel_size: 4
pipeline_parallel_interleave_num: 2
micro_batch_num: 16
pipeline_parallel_layers_per_stage: ["0-5,24-29", "6-11,30-35", "12-17,36-41", "18-23,42-44"]
pipeline_parallel_overlap_p2p: true
pipeline_parallel_overlap_b_f: true
pipeline_parallel_p2p_transport: multi_stream
schedule: interleaved_1f1b
data_parallel:
  mode: hsdp
  shard_size: 32
  replicate_size: 128
  reduce_grad: )" + std::string(policy == ReducePolicy::ASYNC ? "async" : "inline") + "\n",
                          "seed");
}

std::vector<std::string> lines_of(const ProgramSet& set, Rank r) {
  std::vector<std::string> out;
  for (const Program& p : set.programs)
    if (p.rank == r)
      for (const Instr& i : p.instrs) out.push_back(to_line(p, i));
  return out;
}

size_t index_of(const std::vector<std::string>& lines, const std::string& line) {
  auto it = std::find(lines.begin(), lines.end(), line);
  EXPECT_NE(it, lines.end()) << "missing: " << line;
  return static_cast<size_t>(it - lines.begin());
}

// Ops in a batch are listed in transfer order (the cpu-serial execution order): the grad for
// B mb12 s3 was produced on r0 before B mb15 s7 finished, so it comes first.
const std::string kSeedBatch = "r3 p2p.2 BATCH{RECV_B mb12 s3 <-r0; SEND_B mb15 s7 ->r2}";

TEST(Lower, SeedInlineTailReducesBeforeTheSendBatch) {
  const auto lines = lines_of(compile(seed_config(ReducePolicy::INLINE)), Rank{3});
  const size_t b = index_of(lines, "r3 compute B mb15 s7");
  ASSERT_LT(b + 1, lines.size());
  EXPECT_EQ(lines[b + 1], "r3 compute REDUCE_GRAD s7");
  EXPECT_EQ(lines[b + 2], "r3 compute RESHARD s7");  // reshard_after_backward: owned by the reduction
  const size_t batch = index_of(lines, kSeedBatch);
  EXPECT_GT(batch, b + 2);
  for (size_t k = b + 3; k < batch; ++k) EXPECT_EQ(lines[k].find("compute B"), std::string::npos) << lines[k];
}

TEST(Lower, SeedAsyncTailSendsFirstAndReducesOnItsOwnStream) {
  const auto lines = lines_of(compile(seed_config(ReducePolicy::ASYNC)), Rank{3});
  const size_t b = index_of(lines, "r3 compute B mb15 s7");
  EXPECT_EQ(lines[b + 1], "r3 compute RECORD compute_ready[s7]");
  const size_t batch = index_of(lines, kSeedBatch);
  const size_t wait = index_of(lines, "r3 reduce WAIT compute_ready[s7]");
  const size_t red = index_of(lines, "r3 reduce REDUCE_GRAD s7");
  const size_t reshard = index_of(lines, "r3 reduce RESHARD s7");
  const size_t done = index_of(lines, "r3 reduce RECORD reduce_done[s7]");
  EXPECT_LT(batch, wait);
  EXPECT_LT(wait, red);
  EXPECT_LT(red, reshard);
  EXPECT_LT(reshard, done);
  // Nothing between the backward and the batch waits on a reduction.
  for (size_t k = b; k < batch; ++k) EXPECT_EQ(lines[k].find("REDUCE_GRAD"), std::string::npos) << lines[k];
  // One drain before the optimizer, and the last local stage (s3) reduced synchronously after its send.
  const size_t opt = index_of(lines, "r3 compute OPT_STEP");
  EXPECT_LT(index_of(lines, "r3 compute WAIT reduce_done[s7]"), opt);
  EXPECT_LT(index_of(lines, "r3 compute REDUCE_GRAD s3"), opt);
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.find("RESHARD") != std::string::npos; }), 2);
}

// Per rank: the sequence of P2P ops and the batch each sits in (its shape), in program order.
std::map<int32_t, std::vector<std::string>> p2p_sequences(const ProgramSet& set) {
  std::map<int32_t, std::vector<std::string>> out;
  for (const Program& p : set.programs)
    for (const Instr& i : p.instrs)
      if (i.op == OpKind::BATCH) out[p.rank.v].push_back(p.stream_name(i.stream) + " " + to_text(p, i));
  return out;
}

TEST(Lower, PoliciesMoveOnlyReductionInstructions) {
  for (auto transport : {P2PTransport::PLAIN, P2PTransport::BATCH, P2PTransport::MULTI_STREAM}) {
    PipelineConfig a = seed_config(ReducePolicy::INLINE);
    PipelineConfig b = seed_config(ReducePolicy::ASYNC);
    a.pipeline_parallel_p2p_transport = b.pipeline_parallel_p2p_transport = transport;
    const ProgramSet pa = compile(a), pb = compile(b);
    EXPECT_EQ(p2p_sequences(pa), p2p_sequences(pb)) << to_string(transport);
    // Same compute order too.
    for (size_t r = 0; r < pa.programs.size(); ++r) {
      std::vector<Instr> ca, cb;
      for (const Instr& i : pa.programs[r].instrs)
        if (i.op == OpKind::F || i.op == OpKind::B) ca.push_back(i);
      for (const Instr& i : pb.programs[r].instrs)
        if (i.op == OpKind::F || i.op == OpKind::B) cb.push_back(i);
      EXPECT_EQ(ca, cb);
    }
  }
}

// assign-p2p-streams appends event names without a lookup; that is right only if no rank names
// one event twice (the text form would merge two ids).
TEST(Lower, EventNamesAreUniquePerRank) {
  for (auto transport : {P2PTransport::PLAIN, P2PTransport::BATCH, P2PTransport::MULTI_STREAM})
    for (auto policy : {ReducePolicy::INLINE, ReducePolicy::ASYNC})
      for (bool overlap : {false, true}) {
        PipelineConfig c = seed_config(policy);
        c.pipeline_parallel_p2p_transport = transport;
        c.pipeline_parallel_overlap_p2p = overlap;
        for (const Program& p : compile(c).programs) {
          const std::set<std::string> names(p.event_names.begin(), p.event_names.end());
          EXPECT_EQ(names.size(), p.event_names.size()) << "r" << p.rank.v << " " << to_string(transport);
          EXPECT_GT(names.size(), 0u);
        }
      }
}

TEST(Lower, PlainTransportPostsOneOpPerBatch) {
  PipelineConfig c = seed_config(ReducePolicy::ASYNC);
  c.pipeline_parallel_p2p_transport = P2PTransport::PLAIN;
  for (const Program& p : compile(c).programs)
    for (const Instr& i : p.instrs)
      if (i.op == OpKind::BATCH) {
        EXPECT_EQ(i.p2p.size(), 1u) << to_line(p, i);
        EXPECT_EQ(i.stream, streams::kP2P);
      }
}

TEST(Lower, MultiStreamUsesOneStreamPerPipelineEdge) {
  const ProgramSet set = compile(seed_config(ReducePolicy::ASYNC));
  for (const Program& p : set.programs) {
    std::set<std::string> streams;
    for (const Instr& i : p.instrs)
      if (i.op == OpKind::BATCH) streams.insert(p.stream_name(i.stream));
    // Rank r touches edges r-1 (to r-1) and r (to r+1), with wrap-around.
    const int32_t r = p.rank.v;
    EXPECT_EQ(streams, (std::set<std::string>{"p2p." + std::to_string((r + 3) % 4), "p2p." + std::to_string(r)}))
        << "rank " << r;
  }
}

TEST(Lower, EveryManagedStageReducedAndShardedOncePerStep) {
  for (auto policy : {ReducePolicy::INLINE, ReducePolicy::ASYNC}) {
    const ProgramSet set = compile(seed_config(policy));
    for (const Program& p : set.programs) {
      std::map<int32_t, int> reduce, unshard, reshard;
      for (const Instr& i : p.instrs) {
        if (i.op == OpKind::REDUCE_GRAD) ++reduce[i.stage.v];
        if (i.op == OpKind::UNSHARD) ++unshard[i.stage.v];
        if (i.op == OpKind::RESHARD) ++reshard[i.stage.v];
      }
      const std::map<int32_t, int> expect = {{p.pp_rank, 1}, {p.pp_rank + 4, 1}};
      EXPECT_EQ(reduce, expect);
      EXPECT_EQ(unshard, expect);
      EXPECT_EQ(reshard, expect);
    }
  }
}

TEST(Lower, TinyOneFOneBProgramMatchesHandDerivedText) {
  // PP2, 2 microbatches, one P2P stream, no data parallelism, overlap_p2p: recv waits sit right
  // before their consumer. Rank 0: F0 F1 then B0 B1; rank 1: F0 B0 F1 B1.
  const PipelineConfig c = load_config_text(R"(
pipeline_parallel_size: 2
micro_batch_num: 2
num_layers: 2
schedule: 1f1b
pipeline_parallel_overlap_p2p: true
pipeline_parallel_p2p_transport: batch
)");
  const std::string expect = R"(world pp=2 vpp=1 shard=1 replicate=1 expanded=0 mode=none policy=none
r0 compute F mb0 s0
r0 compute RECORD fwd_out[mb0,s0]
r0 p2p WAIT fwd_out[mb0,s0]
r0 p2p BATCH{SEND_F mb0 s0 ->r1}
r0 compute F mb1 s0
r0 compute RECORD fwd_out[mb1,s0]
r0 p2p WAIT fwd_out[mb1,s0]
r0 p2p BATCH{SEND_F mb1 s0 ->r1; RECV_B mb0 s0 <-r1}
r0 p2p RECORD recv_B[mb0,s0]
r0 compute WAIT recv_B[mb0,s0]
r0 compute B mb0 s0
r0 p2p BATCH{RECV_B mb1 s0 <-r1}
r0 p2p RECORD recv_B[mb1,s0]
r0 compute WAIT recv_B[mb1,s0]
r0 compute B mb1 s0
r0 compute OPT_STEP
r1 p2p BATCH{RECV_F mb0 s1 <-r0}
r1 p2p RECORD recv_F[mb0,s1]
r1 compute WAIT recv_F[mb0,s1]
r1 compute F mb0 s1
r1 compute B mb0 s1
r1 compute RECORD bwd_out[mb0,s1]
r1 p2p WAIT bwd_out[mb0,s1]
r1 p2p BATCH{RECV_F mb1 s1 <-r0; SEND_B mb0 s1 ->r0}
r1 p2p RECORD recv_F[mb1,s1]
r1 compute WAIT recv_F[mb1,s1]
r1 compute F mb1 s1
r1 compute B mb1 s1
r1 compute RECORD bwd_out[mb1,s1]
r1 p2p WAIT bwd_out[mb1,s1]
r1 p2p BATCH{SEND_B mb1 s1 ->r0}
r1 compute OPT_STEP
)";
  EXPECT_EQ(to_text(compile(c)), expect);
}

}  // namespace
}  // namespace ppstream
