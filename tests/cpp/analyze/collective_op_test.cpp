// Collectives classified by the producer's op, not by a name containing "reduce": one small
// trace per format, each with a name that holds "reduce" but is no reduction.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"
#include "ppstream/analyze/trace_writer.h"
#include "util.h"

namespace ppstream::analyze {
namespace {

std::map<std::string, std::pair<SliceKind, CollectiveOp>> ops_by_name(const TraceSet& set) {
  std::map<std::string, std::pair<SliceKind, CollectiveOp>> out;
  for (const auto& tl : set.ranks) {
    for (const auto& s : tl.slices) out[set.strings.str(s.name)] = {s.kind, s.op};
  }
  return out;
}

std::string read_back(const std::string& name, const std::string& text, TraceSet& set) {
  const auto path = testing::write_file(testing::temp_dir(name) / (name + ".json"), text);
  read_paths({path}, set);
  return path;
}

// A Kineto kernel on `stream` at `ts` µs for `dur` µs, with args.Collective name when given.
std::string kernel(const std::string& name, int ts, int dur, int stream, const std::string& collective = "") {
  std::string args = R"("stream":)" + std::to_string(stream);
  if (!collective.empty()) args += R"(,"Collective name":")" + collective + "\"";
  return R"({"ph":"X","cat":"kernel","name":")" + name + R"(","pid":0,"tid":1,"ts":)" + std::to_string(ts) +
         R"(,"dur":)" + std::to_string(dur) + R"(,"args":{)" + args + "}}";
}

TEST(AnalyzeCollectiveOp, KinetoByCollectiveNameThenKernelName) {
  const std::string events[] = {
      kernel("void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)", 0, 1000, 7),
      kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 0, 10, 9),
      kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 100, 20, 9),
      kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 200, 40, 9),
      kernel("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", 300, 80, 9),
      kernel("ncclKernel_Reduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 400, 160, 9),
      kernel("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", 600, 320, 9, "_reduce_scatter_base"),
      kernel("ncclAllGatherRingLLKernel_sum_f32", 1000, 640, 9),
      kernel("ncclKernel_AllGather_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 1700, 5, 9,
             "all_gather_into_tensor_coalesced"),
  };
  std::string text = R"({"distributedInfo": {"rank": 0}, "traceEvents": [)";
  for (const auto& e : events) text += (&e == events ? "" : ",") + e;
  text += "]}";
  TraceSet set;
  const auto path = read_back("collective_op_kineto", text, set);
  const auto ops = ops_by_name(set);
  using K = SliceKind;
  using O = CollectiveOp;
  const auto at = [&](const std::string& prefix) {
    for (const auto& [n, v] : ops) {
      if (n.rfind(prefix, 0) == 0) return v;
    }
    ADD_FAILURE() << "no slice named " << prefix;
    return std::pair{K::HOST, O::OTHER};
  };
  EXPECT_EQ(at("void at::native::reduce_kernel"), std::pair(K::COMPUTE, O::OTHER));
  EXPECT_EQ(at("ncclKernel_AllReduce"), std::pair(K::COLLECTIVE, O::ALL_REDUCE));
  EXPECT_EQ(at("ncclDevKernel_ReduceScatter"), std::pair(K::COLLECTIVE, O::REDUCE_SCATTER));
  EXPECT_EQ(at("ncclDevKernel_AllGather"), std::pair(K::COLLECTIVE, O::ALL_GATHER));
  EXPECT_EQ(at("ncclKernel_Broadcast"), std::pair(K::COLLECTIVE, O::BROADCAST));
  EXPECT_EQ(at("ncclKernel_Reduce_"), std::pair(K::COLLECTIVE, O::REDUCE));
  EXPECT_EQ(at("ncclDevKernel_Generic"), std::pair(K::COLLECTIVE, O::REDUCE_SCATTER));  // by args
  EXPECT_EQ(at("ncclAllGatherRingLLKernel"), std::pair(K::COLLECTIVE, O::ALL_GATHER));
  EXPECT_EQ(at("ncclKernel_AllGather"), std::pair(K::COLLECTIVE, O::ALL_GATHER));
  // Reductions: all-reduce 10 + reduce-scatter 20 + reduce 160 + generic reduce-scatter 320 µs;
  // not the compute reduce_kernel, the all-gathers or the broadcast.
  const auto r = analyze_paths({path});
  ASSERT_EQ(r.total.ranks.size(), 1u);
  EXPECT_NEAR(r.total.ranks[0].reduce_comm_ms, 0.510, 1e-12);
  EXPECT_NEAR(r.total.ranks[0].comm_ms, 0.510 + 0.040 + 0.080 + 0.640 + 0.005, 1e-12);
}

TEST(AnalyzeCollectiveOp, OursByInstructionOp) {
  TraceWriter w("handmade", true);  // µs
  w.slice(Rank(0), "compute", "ReduceMean", 0, 1000, SliceKind::COMPUTE);
  w.slice(Rank(0), "reduce", "r0 reduce UNSHARD s0", 0, 10, SliceKind::COLLECTIVE, "shard[pp0]");
  w.slice(Rank(0), "reduce", "r0 reduce REDUCE_GRAD s0", 100, 20, SliceKind::COLLECTIVE, "dp[pp0]");
  // A collective whose name holds "reduce" but is no instruction: its op is unknown, not a reduction.
  w.slice(Rank(0), "reduce", "reduce_kernel", 200, 40, SliceKind::COLLECTIVE, "dp[pp0]");
  TraceSet set;
  const auto path = read_back("collective_op_ours", w.str(), set);
  const auto ops = ops_by_name(set);
  EXPECT_EQ(ops.at("ReduceMean"), std::pair(SliceKind::COMPUTE, CollectiveOp::OTHER));
  EXPECT_EQ(ops.at("r0 reduce UNSHARD s0"), std::pair(SliceKind::COLLECTIVE, CollectiveOp::ALL_GATHER));
  EXPECT_EQ(ops.at("r0 reduce REDUCE_GRAD s0"), std::pair(SliceKind::COLLECTIVE, CollectiveOp::REDUCE));
  EXPECT_EQ(ops.at("reduce_kernel"), std::pair(SliceKind::COLLECTIVE, CollectiveOp::OTHER));
  const auto r = analyze_paths({path});
  ASSERT_EQ(r.total.ranks.size(), 1u);
  EXPECT_NEAR(r.total.ranks[0].reduce_comm_ms, 0.020, 1e-12);  // REDUCE_GRAD only
  EXPECT_NEAR(r.total.ranks[0].comm_ms, 0.070, 1e-12);
}

TEST(AnalyzeCollectiveOp, AscendHcomAndMindSporeByOpWord) {
  // HCCL "Group 0 Communication" ops and MindSpore "CPU OP" primitives (docs/analyze.md).
  std::string text = R"({"traceEvents": [
    {"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"HCCL"}},
    {"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"Group 0 Communication"}},
    {"ph":"M","name":"process_name","pid":3,"tid":0,"args":{"name":"CPU OP"}})";
  int ts = 0;
  for (const char* n : {"hcom_allReduce__868_0_1", "hcom_reduceScatter__1_0", "hcom_allGather__2_0",
                        "hcom_broadcast__3_0", "hcom_reduce__4_0", "hcom_send__5_0", "hcom_receive__6_0",
                        "hcom_alltoallv__7_0"}) {
    text += std::string(R"(, {"ph":"X","name":")") + n + R"(","pid":1,"tid":2,"ts":)" + std::to_string(ts) +
            R"(,"dur":10,"args":{}})";
    ts += 100;
  }
  for (const char* n : {"Default/AllReduce-op0", "Default/ReduceMean-op1", "Default/network/AllGather-op2"}) {
    text += std::string(R"(, {"ph":"X","name":")") + n + R"(","pid":3,"tid":0,"ts":)" + std::to_string(ts) +
            R"(,"dur":10,"args":{"type":"HostCpuOps"}})";
    ts += 100;
  }
  text += "]}";
  TraceSet set;
  read_back("collective_op_ascend", text, set);
  const auto ops = ops_by_name(set);
  using K = SliceKind;
  using O = CollectiveOp;
  EXPECT_EQ(ops.at("hcom_allReduce__868_0_1"), std::pair(K::COLLECTIVE, O::ALL_REDUCE));
  EXPECT_EQ(ops.at("hcom_reduceScatter__1_0"), std::pair(K::COLLECTIVE, O::REDUCE_SCATTER));
  EXPECT_EQ(ops.at("hcom_allGather__2_0"), std::pair(K::COLLECTIVE, O::ALL_GATHER));
  EXPECT_EQ(ops.at("hcom_broadcast__3_0"), std::pair(K::COLLECTIVE, O::BROADCAST));
  EXPECT_EQ(ops.at("hcom_reduce__4_0"), std::pair(K::COLLECTIVE, O::REDUCE));
  EXPECT_EQ(ops.at("hcom_send__5_0"), std::pair(K::P2P, O::SEND));
  EXPECT_EQ(ops.at("hcom_receive__6_0"), std::pair(K::P2P, O::RECV));
  EXPECT_EQ(ops.at("hcom_alltoallv__7_0"), std::pair(K::COLLECTIVE, O::OTHER));
  EXPECT_EQ(ops.at("Default/AllReduce-op0"), std::pair(K::COLLECTIVE, O::ALL_REDUCE));
  EXPECT_EQ(ops.at("Default/ReduceMean-op1"), std::pair(K::COMPUTE, O::OTHER));
  EXPECT_EQ(ops.at("Default/network/AllGather-op2"), std::pair(K::COLLECTIVE, O::ALL_GATHER));
}

TEST(AnalyzeCollectiveOp, ReductionsAreAllReduceReduceScatterAndReduce) {
  using O = CollectiveOp;
  for (O op : {O::ALL_REDUCE, O::REDUCE_SCATTER, O::REDUCE}) EXPECT_TRUE(is_reduction(op)) << to_string(op);
  for (O op : {O::ALL_GATHER, O::BROADCAST, O::SEND, O::RECV, O::OTHER}) EXPECT_FALSE(is_reduction(op)) << to_string(op);
  Slice s;
  s.op = O::ALL_REDUCE;
  s.kind = SliceKind::COMPUTE;  // only collectives count
  EXPECT_FALSE(is_reduction(s));
  s.kind = SliceKind::COLLECTIVE;
  EXPECT_TRUE(is_reduction(s));
}

}  // namespace
}  // namespace ppstream::analyze
