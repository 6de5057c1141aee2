// Hand-made four-rank traces in our format: the tail of a backward pass where rank 3's gradient
// reduction delays the input-gradient sends (inline/legacy) or does not (async). Times in µs.
#pragma once

#include <string>

#include "ppstream/analyze/trace_writer.h"

namespace ppstream::analyze::testing {

inline std::string legacy_trace() {
  TraceWriter w("handmade", true);
  for (int r = 0; r < 4; ++r) w.set_pp_rank(Rank(r), r);
  // rank 3: B, then the reduction on the compute stream; the send waits the compute tail.
  w.slice(Rank(3), "compute", "r3 compute B mb15 s3", 0, 100, SliceKind::COMPUTE);
  w.slice(Rank(3), "compute", "r3 compute REDUCE_GRAD s3", 100, 500, SliceKind::COLLECTIVE, "replicate[3]", 8 << 20);
  w.wait(Rank(3), "p2p.2", "bwd_out[mb15,s3]", "r3 p2p.2 WAIT bwd_out[mb15,s3]", 100, 500);
  w.slice(Rank(3), "p2p.2", "r3 p2p.2 BATCH{SEND_B mb15 s3 ->r2}", 600, 10, SliceKind::P2P, "", 8 << 20);
  // rank 2: waits rank 3's input grad, runs B, reduces inline, then sends to rank 1.
  w.slice(Rank(2), "compute", "r2 compute B mb14 s2", 0, 50, SliceKind::COMPUTE);
  w.wait(Rank(2), "compute", "recv_B[mb15,s2]", "r2 compute WAIT recv_B[mb15,s2]", 50, 560);
  w.slice(Rank(2), "compute", "r2 compute B mb15 s2", 610, 100, SliceKind::COMPUTE);
  w.slice(Rank(2), "compute", "r2 compute REDUCE_GRAD s2", 710, 50, SliceKind::COLLECTIVE, "replicate[2]");
  w.slice(Rank(2), "p2p.2", "r2 p2p.2 BATCH{RECV_B mb15 s2 <-r3}", 50, 560, SliceKind::P2P);
  w.wait(Rank(2), "p2p.1", "bwd_out[mb15,s2]", "r2 p2p.1 WAIT bwd_out[mb15,s2]", 615, 145);
  w.slice(Rank(2), "p2p.1", "r2 p2p.1 BATCH{SEND_B mb15 s2 ->r1}", 760, 10, SliceKind::P2P);
  // rank 1: waits rank 2's input grad.
  w.wait(Rank(1), "compute", "recv_B[mb15,s1]", "r1 compute WAIT recv_B[mb15,s1]", 60, 710);
  w.slice(Rank(1), "compute", "r1 compute B mb15 s1", 770, 100, SliceKind::COMPUTE);
  w.slice(Rank(1), "p2p.1", "r1 p2p.1 BATCH{RECV_B mb15 s1 <-r2}", 60, 710, SliceKind::P2P);
  // rank 0: idle compute until the end.
  w.slice(Rank(0), "compute", "r0 compute F mb15 s0", 0, 40, SliceKind::COMPUTE);
  w.set_producer_metrics(R"({"step_time_ms":0.87})");
  return w.str();
}

inline std::string async_trace() {
  TraceWriter w("handmade", true);
  for (int r = 0; r < 4; ++r) w.set_pp_rank(Rank(r), r);
  w.slice(Rank(3), "compute", "r3 compute B mb15 s3", 0, 100, SliceKind::COMPUTE);
  w.wait(Rank(3), "reduce", "compute_ready[s3]", "r3 reduce WAIT compute_ready[s3]", 5, 95);
  w.slice(Rank(3), "reduce", "r3 reduce REDUCE_GRAD s3", 100, 500, SliceKind::COLLECTIVE, "replicate[3]", 8 << 20);
  w.wait(Rank(3), "p2p.2", "bwd_out[mb15,s3]", "r3 p2p.2 WAIT bwd_out[mb15,s3]", 5, 95);
  w.slice(Rank(3), "p2p.2", "r3 p2p.2 BATCH{SEND_B mb15 s3 ->r2}", 100, 10, SliceKind::P2P, "", 8 << 20);
  w.slice(Rank(2), "compute", "r2 compute B mb14 s2", 0, 50, SliceKind::COMPUTE);
  w.wait(Rank(2), "compute", "recv_B[mb15,s2]", "r2 compute WAIT recv_B[mb15,s2]", 50, 60);
  w.slice(Rank(2), "compute", "r2 compute B mb15 s2", 110, 100, SliceKind::COMPUTE);
  w.slice(Rank(2), "reduce", "r2 reduce REDUCE_GRAD s2", 210, 50, SliceKind::COLLECTIVE, "replicate[2]");
  w.slice(Rank(2), "p2p.2", "r2 p2p.2 BATCH{RECV_B mb15 s2 <-r3}", 50, 60, SliceKind::P2P);
  w.wait(Rank(2), "p2p.1", "bwd_out[mb15,s2]", "r2 p2p.1 WAIT bwd_out[mb15,s2]", 115, 95);
  w.slice(Rank(2), "p2p.1", "r2 p2p.1 BATCH{SEND_B mb15 s2 ->r1}", 210, 10, SliceKind::P2P);
  w.wait(Rank(1), "compute", "recv_B[mb15,s1]", "r1 compute WAIT recv_B[mb15,s1]", 60, 160);
  w.slice(Rank(1), "compute", "r1 compute B mb15 s1", 220, 100, SliceKind::COMPUTE);
  w.slice(Rank(1), "p2p.1", "r1 p2p.1 BATCH{RECV_B mb15 s1 <-r2}", 60, 160, SliceKind::P2P);
  w.slice(Rank(0), "compute", "r0 compute F mb15 s0", 0, 40, SliceKind::COMPUTE);
  return w.str();
}

}  // namespace ppstream::analyze::testing
