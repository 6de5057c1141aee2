// Gradient buckets (data_parallel.reduce_buckets, docs/semantics.md "Gradient buckets"): the
// compiled order for k = 2 (inline, async, split backward), k = 1 spelled as before, the text
// and JSON forms of a bucket, the config's rules, and the verifier's reduce-once /
// bucket-cover / happens-before rules rejecting a bucket reduced before its piece, twice, or
// not at all.
#include <gtest/gtest.h>

#include <string>

#include "ppstream/config/config.h"
#include "ppstream/lower/lower.h"
#include "ppstream/program/format.h"
#include "ppstream/verify/verify.h"

namespace ppstream {
namespace {

// PP2 1F1B, 2 microbatches, 3 layers per stage, plain DP over 2 replicas.
std::string pipeline(const std::string& schedule, const std::string& dp) {
  return "pipeline_parallel_size: 2\nmicro_batch_num: 2\nnum_layers: 6\nschedule: " + schedule +
         "\ndata_parallel: {mode: hsdp, shard_size: 1, replicate_size: 2, " + dp + "}\n";
}

std::string rank_text(const ProgramSet& set, int32_t rank) { return to_text(set, Rank{rank}); }

std::vector<Violation> verify_all(const ProgramSet& set) {
  VerifyOptions vo;
  vo.platforms = parse_platform_list("all");
  return verify(set, vo);
}

bool has_rule(const std::vector<Violation>& vs, const std::string& rule, const std::string& part) {
  for (const Violation& v : vs)
    if (v.rule == rule && v.message.find(part) != std::string::npos) return true;
  return false;
}

std::string all_messages(const std::vector<Violation>& vs) {
  std::string out;
  for (const Violation& v : vs) out += v.to_string() + "\n";
  return out;
}

// Async, k = 2 on the first PP rank (stage 0: no send after its last backward) and the last
// (its last piece's input grad is sent before the last bucket's reduction is issued).
TEST(Buckets, AsyncTwoBucketsCompileInThisOrder) {
  const ProgramSet set =
      compile(load_config_text(pipeline("1f1b", "reduce_grad: async, sync_last_reduce: false, reduce_buckets: 2")));
  EXPECT_EQ(rank_text(set, 0), R"(world pp=2 vpp=1 shard=1 replicate=2 expanded=0 mode=hsdp policy=async
r0 compute F mb0 s0
r0 compute RECORD fwd_out[mb0,s0]
r0 p2p WAIT fwd_out[mb0,s0]
r0 p2p BATCH{SEND_F mb0 s0 ->r1}
r0 p2p RECORD batch_done[0]
r0 compute WAIT batch_done[0]
r0 compute F mb1 s0
r0 compute RECORD fwd_out[mb1,s0]
r0 p2p WAIT fwd_out[mb1,s0]
r0 p2p BATCH{SEND_F mb1 s0 ->r1; RECV_B mb0 s0 <-r1}
r0 p2p RECORD batch_done[1]
r0 compute WAIT batch_done[1]
r0 compute B mb0 s0
r0 p2p BATCH{RECV_B mb1 s0 <-r1}
r0 p2p RECORD batch_done[2]
r0 compute WAIT batch_done[2]
r0 compute B mb1 s0 bucket0/2
r0 compute RECORD compute_ready[s0.b0]
r0 reduce WAIT compute_ready[s0.b0]
r0 reduce REDUCE_GRAD s0 bucket0/2
r0 reduce RECORD reduce_done[s0.b0]
r0 compute B mb1 s0 bucket1/2
r0 compute RECORD compute_ready[s0.b1]
r0 reduce WAIT compute_ready[s0.b1]
r0 reduce REDUCE_GRAD s0 bucket1/2
r0 reduce RECORD reduce_done[s0.b1]
r0 compute WAIT reduce_done[s0.b0]
r0 compute WAIT reduce_done[s0.b1]
r0 compute OPT_STEP
)");
  EXPECT_EQ(rank_text(set, 1), R"(world pp=2 vpp=1 shard=1 replicate=2 expanded=0 mode=hsdp policy=async
r1 p2p BATCH{RECV_F mb0 s1 <-r0}
r1 p2p RECORD batch_done[0]
r1 compute WAIT batch_done[0]
r1 compute F mb0 s1
r1 compute B mb0 s1
r1 compute RECORD bwd_out[mb0,s1]
r1 p2p WAIT bwd_out[mb0,s1]
r1 p2p BATCH{RECV_F mb1 s1 <-r0; SEND_B mb0 s1 ->r0}
r1 p2p RECORD batch_done[1]
r1 compute WAIT batch_done[1]
r1 compute F mb1 s1
r1 compute B mb1 s1 bucket0/2
r1 compute RECORD compute_ready[s1.b0]
r1 reduce WAIT compute_ready[s1.b0]
r1 reduce REDUCE_GRAD s1 bucket0/2
r1 reduce RECORD reduce_done[s1.b0]
r1 compute B mb1 s1 bucket1/2
r1 compute RECORD compute_ready[s1.b1]
r1 compute RECORD bwd_out[mb1,s1]
r1 p2p WAIT bwd_out[mb1,s1]
r1 p2p BATCH{SEND_B mb1 s1 ->r0}
r1 reduce WAIT compute_ready[s1.b1]
r1 reduce REDUCE_GRAD s1 bucket1/2
r1 reduce RECORD reduce_done[s1.b1]
r1 p2p RECORD batch_done[2]
r1 compute WAIT batch_done[2]
r1 compute WAIT reduce_done[s1.b0]
r1 compute WAIT reduce_done[s1.b1]
r1 compute OPT_STEP
)");
  EXPECT_TRUE(verify_all(set).empty()) << all_messages(verify_all(set));
}

// Inline: each bucket's reduction on compute right after its piece, before the send.
TEST(Buckets, InlineReducesEachBucketRightAfterItsPiece) {
  const ProgramSet set = compile(load_config_text(pipeline("1f1b", "reduce_grad: inline, reduce_buckets: 3")));
  const std::string r1 = rank_text(set, 1);
  EXPECT_NE(r1.find("r1 compute B mb1 s1 bucket0/3\nr1 compute REDUCE_GRAD s1 bucket0/3\n"
                    "r1 compute B mb1 s1 bucket1/3\nr1 compute REDUCE_GRAD s1 bucket1/3\n"
                    "r1 compute B mb1 s1 bucket2/3\nr1 compute REDUCE_GRAD s1 bucket2/3\n"
                    "r1 compute RECORD bwd_out[mb1,s1]\n"),
            std::string::npos)
      << r1;
  EXPECT_TRUE(verify_all(set).empty()) << all_messages(verify_all(set));
}

// Split backward (ZB-H1): the last W is split, after the I whose input grad is already sent.
TEST(Buckets, SplitBackwardSplitsTheLastW) {
  const ProgramSet set =
      compile(load_config_text(pipeline("zb_h1", "reduce_grad: async, sync_last_reduce: false, reduce_buckets: 2")));
  const std::string r1 = rank_text(set, 1);
  const size_t send = r1.find("BATCH{SEND_B mb1 s1 ->r0}");
  const size_t w0 = r1.find("r1 compute W mb1 s1 bucket0/2\nr1 compute RECORD compute_ready[s1.b0]\n"
                            "r1 reduce WAIT compute_ready[s1.b0]\nr1 reduce REDUCE_GRAD s1 bucket0/2\n");
  const size_t w1 = r1.find("r1 compute W mb1 s1 bucket1/2\n");
  ASSERT_NE(send, std::string::npos) << r1;
  ASSERT_NE(w0, std::string::npos) << r1;
  ASSERT_NE(w1, std::string::npos) << r1;
  EXPECT_LT(send, w0);
  EXPECT_LT(w0, w1);
  EXPECT_EQ(r1.find("I mb1 s1 bucket"), std::string::npos);
  EXPECT_TRUE(verify_all(set).empty()) << all_messages(verify_all(set));
}

// k = 1, given or not, is today's program; sync_last_reduce keeps the last stage whole.
TEST(Buckets, OneBucketIsTheProgramOfBeforeAndTheSyncLastStageStaysWhole) {
  const std::string dp = "reduce_grad: async, sync_last_reduce: true";
  const ProgramSet plain = compile(load_config_text(pipeline("1f1b", dp)));
  const ProgramSet one = compile(load_config_text(pipeline("1f1b", dp + ", reduce_buckets: 1")));
  EXPECT_EQ(to_text(plain), to_text(one));
  EXPECT_EQ(to_text(plain).find("bucket"), std::string::npos);
  const ProgramSet two = compile(load_config_text(pipeline("1f1b", dp + ", reduce_buckets: 2")));
  EXPECT_EQ(to_text(two), to_text(plain));  // one stage per rank, and it is the sync-last one
}

TEST(Buckets, TextAndJsonRoundTrip) {
  const ProgramSet set =
      compile(load_config_text(pipeline("zb_h1", "reduce_grad: async, sync_last_reduce: false, reduce_buckets: 3")));
  EXPECT_EQ(parse_program_set(to_text(set)), set);
  EXPECT_EQ(parse_json(to_json(set)), set);
  const std::string head = "world pp=1 vpp=1 shard=1 replicate=2 expanded=0 mode=hsdp policy=inline\n";
  for (const char* bad : {"r0 compute B mb0 s0 bucket2/2", "r0 compute B mb0 s0 bucket0/1", "r0 compute B mb0 s0 b0/2",
                          "r0 compute F mb0 s0 bucket0/2", "r0 compute I mb0 s0 bucket0/2",
                          "r0 compute REDUCE_GRAD s0 bucket1", "r0 compute UNSHARD s0 bucket0/2"})
    EXPECT_THROW(parse_program_set(head + bad + "\n"), ParseError) << bad;
}

TEST(Buckets, ConfigNamesTheKey) {
  auto error_of = [](const std::string& text) {
    try {
      load_config_text(text, "t.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(pipeline("1f1b", "reduce_buckets: 4")).find("data_parallel.reduce_buckets=4 must be between 1 and 3"),
            std::string::npos);
  EXPECT_NE(error_of(pipeline("1f1b", "reduce_buckets: 0")).find("data_parallel.reduce_buckets=0"), std::string::npos);
  EXPECT_NE(error_of(pipeline("1f1b", "reduce_grad: async, reduce_order: priority, reduce_buckets: 2"))
                .find("cannot be combined with data_parallel.reduce_order=priority"),
            std::string::npos);
  EXPECT_NE(error_of("pipeline_parallel_size: 2\nnum_layers: 2\ndata_parallel: {reduce_buckets: 2}\n")
                .find("data_parallel.reduce_buckets=2 needs data_parallel.mode"),
            std::string::npos);
  const PipelineConfig c = load_config_text(pipeline("1f1b", "reduce_buckets: 2"));
  EXPECT_EQ(load_config_text(to_yaml(c)).reduce_buckets, 2);
}

// The inline k = 2 program of rank 1, as text, to break by hand.
std::string inline_text() {
  return to_text(compile(load_config_text(pipeline("1f1b", "reduce_grad: inline, reduce_buckets: 2"))));
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(Buckets, VerifierRejectsABucketReducedBeforeItsPiece) {
  const std::string text = replace_once(
      inline_text(), "r1 compute B mb1 s1 bucket1/2\nr1 compute REDUCE_GRAD s1 bucket1/2\n",
      "r1 compute REDUCE_GRAD s1 bucket1/2\nr1 compute B mb1 s1 bucket1/2\n");
  const auto vs = verify_all(parse_program_set(text));
  EXPECT_TRUE(has_rule(vs, "happens-before", "accumulated grads: B mb1 s1 bucket1/2")) << all_messages(vs);
  // The other bucket's piece may come later: reducing bucket 0 before piece 1 is fine.
  EXPECT_TRUE(verify_all(parse_program_set(inline_text())).empty());
}

TEST(Buckets, VerifierRejectsABucketReducedTwice) {
  const std::string text = replace_once(inline_text(), "r1 compute REDUCE_GRAD s1 bucket0/2\n",
                                        "r1 compute REDUCE_GRAD s1 bucket0/2\nr1 compute REDUCE_GRAD s1 bucket0/2\n");
  const auto vs = verify_all(parse_program_set(text));
  EXPECT_TRUE(has_rule(vs, "reduce-once", "second REDUCE_GRAD of s1 bucket0/2")) << all_messages(vs);
}

TEST(Buckets, VerifierRejectsAMissingBucketOrPiece) {
  const auto missing = verify_all(parse_program_set(replace_once(inline_text(), "r1 compute REDUCE_GRAD s1 bucket1/2\n", "")));
  EXPECT_TRUE(has_rule(missing, "reduce-once", "no REDUCE_GRAD s1 bucket1/2")) << all_messages(missing);
  const auto counts = verify_all(parse_program_set(replace_once(inline_text(), "r1 compute REDUCE_GRAD s1 bucket1/2\n",
                                                         "r1 compute REDUCE_GRAD s1 bucket1/3\n")));
  EXPECT_TRUE(has_rule(counts, "reduce-once", "one bucket count")) << all_messages(counts);
  const auto piece = verify_all(parse_program_set(replace_once(inline_text(), "r1 compute B mb1 s1 bucket1/2\n", "")));
  EXPECT_TRUE(has_rule(piece, "bucket-cover", "bucket1/2 is missing")) << all_messages(piece);
  // Pieces out of bucket order (bucket 1, the stage's first layers, before bucket 0).
  std::string swapped = replace_once(inline_text(), "r1 compute B mb1 s1 bucket0/2\n", "@\n");
  swapped = replace_once(swapped, "r1 compute B mb1 s1 bucket1/2\n", "r1 compute B mb1 s1 bucket0/2\n");
  swapped = replace_once(swapped, "@\n", "r1 compute B mb1 s1 bucket1/2\n");
  const auto order = verify_all(parse_program_set(swapped));
  EXPECT_TRUE(has_rule(order, "bucket-cover", "must be bucket0/2")) << all_messages(order);
}

}  // namespace
}  // namespace ppstream
