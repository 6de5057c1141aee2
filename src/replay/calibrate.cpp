// `ppstream replay --calibrate`: measures this machine's (or allocation's) transport with the
// same MPI settings replay uses — P2P latency (8-byte ping-pong) and bandwidth (4 MiB), and the
// ring all-reduce's per-step latency and bandwidth over MPI_COMM_WORLD — and prints a `cost:`
// section whose comments say which keys were measured and which were kept from the config.
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <iostream>
#include <vector>

#include "ppstream/replay/replay.h"
#include "ppstream/sim/cost_model.h"

namespace ppstream::replay {
namespace {

constexpr int kReps = 20;

// Median one-way time (ms) of a ping-pong of `bytes` between ranks 0 and 1.
double ping_pong_ms(int me, int64_t bytes) {
  std::vector<char> buf(static_cast<size_t>(bytes));
  std::vector<double> t;
  for (int r = 0; r < kReps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (me == 0) {
      MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (me == 1) {
      MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
    t.push_back((MPI_Wtime() - t0) * 1000 / 2);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Median time (ms) of an all-reduce of `count` doubles over the world (the slowest rank).
double all_reduce_ms(int64_t count) {
  std::vector<double> in(static_cast<size_t>(count), 1.0), out(in.size());
  std::vector<double> t;
  for (int r = 0; r < kReps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double dt = (MPI_Wtime() - t0) * 1000, worst = 0;
    MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    t.push_back(worst);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int run_calibrate(const PipelineConfig& cfg) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  int me = 0, np = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (np < 2) {
    if (me == 0) std::cerr << "replay --calibrate: needs at least 2 processes (--np 2 or more)\n";
    MPI_Finalize();
    return 2;
  }
  constexpr int64_t kBig = int64_t{4} << 20;
  const double lat = ping_pong_ms(me, 8);
  const double big = ping_pong_ms(me, kBig);
  const double bw = static_cast<double>(kBig) / std::max(big - lat, 1e-6) / 1e6;  // GB/s = bytes/ms / 1e6
  const double ar_small = all_reduce_ms(1);
  const double ar_big = all_reduce_ms(kBig / 8);
  const int n = np;
  const double alpha = ar_small / (2.0 * (n - 1));
  const double ar_bw = 2.0 * (n - 1) / n * static_cast<double>(kBig) / std::max(ar_big - ar_small, 1e-6) / 1e6;
  if (me == 0) {
    const auto it = cfg.extra_sections.find("cost");
    const sim::CostSpec c = it == cfg.extra_sections.end() ? sim::CostSpec{} : sim::parse_cost_spec(it->second, cfg.num_stages());
    std::cout << fmt::format(
        "# ppstream replay --calibrate: {} processes, MPI settings as replay uses them (docs/replay.md)\n"
        "cost:\n"
        "  # measured: 8-byte ping-pong, median of {} one-way times\n"
        "  p2p_latency_ms: {:.6f}\n"
        "  # measured: 4 MiB ping-pong, bytes / (time - latency)\n"
        "  p2p_bandwidth_gb_per_s: {:.4f}\n"
        "  # measured: all-reduce over {} ranks, 1 double: time / (2(n-1)) per ring step\n"
        "  collective_alpha_ms: {:.6f}\n"
        "  # measured: all-reduce of 4 MiB over {} ranks, ring model 2(n-1)/n N / (time - small time)\n"
        "  shard_bandwidth_gb_per_s: {:.4f}\n"
        "  replicate_bandwidth_gb_per_s: {:.4f}\n"
        "  # assumed (kept from the config): compute and sizes\n"
        "  forward_ms_per_layer: {}\n  backward_ms_per_layer: {}\n  optimizer_ms: {}\n"
        "  moe_dispatch_ms_per_layer: {}\n  moe_combine_ms_per_layer: {}\n"
        "  activation_bytes: {}\n  grad_bytes_per_layer: {}\n  param_bytes_per_layer: {}\n",
        np, kReps, lat, bw, n, alpha, n, ar_bw, ar_bw, c.forward_ms_per_layer, c.backward_ms_per_layer, c.optimizer_ms,
        c.moe_dispatch_ms_per_layer, c.moe_combine_ms_per_layer, c.activation_bytes, c.grad_bytes_per_layer,
        c.param_bytes_per_layer);
  }
  MPI_Finalize();
  return 0;
}

}  // namespace ppstream::replay
