// `ppstream replay --calibrate`: measures this machine's (or allocation's) transport with the
// same MPI settings replay uses — P2P latency (8-byte ping-pong) and bandwidth (4 MiB) between
// pipeline neighbours, and reduce-scatter, all-gather and all-reduce on every group size the
// config uses (its shard and its replicate group, split from the world as replay splits them,
// all groups at once) — fits each to the simulator's ring model (sim/cost_model.h), replays the
// config's programs with the communication model zero for replay's own transfer overhead
// and its host's issue rate (p2p_latency_ms, collective_alpha_ms, host_issue_ms, when run on the
// config's whole world: replay/overhead.h), and prints
// a `cost:` section whose comments say, key by key, what was measured and what was kept from
// the config (docs/replay.md, "Calibration").
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <vector>

#include "ppstream/replay/replay.h"
#include "ppstream/sim/cost_model.h"
#include "replay/overhead.h"
#include "replay/progress.h"

namespace ppstream::replay {
namespace {

constexpr int kReps = 20;
constexpr int64_t kBigBytes = int64_t{4} << 20;
constexpr int32_t kOverheadSteps = 5;  // steps replayed with the communication model zero (their median)

// Median over kReps of the slowest member's time (ms) of `op` on `comm` (barrier before each).
double median_ms(MPI_Comm comm, const std::function<void()>& op) {
  std::vector<double> t;
  for (int r = 0; r < kReps; ++r) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    op();
    double dt = (MPI_Wtime() - t0) * 1000, worst = 0;
    MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
    t.push_back(worst);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Median one-way time (ms) of a ping-pong of `bytes` between world ranks 0 and `peer`.
double ping_pong_ms(int me, int peer, int64_t bytes) {
  std::vector<char> buf(static_cast<size_t>(bytes));
  return median_ms(MPI_COMM_WORLD, [&] {
           if (me == 0) {
             MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, peer, 0, MPI_COMM_WORLD);
             MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
           } else if (me == peer) {
             MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
             MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, 0, 0, MPI_COMM_WORLD);
           }
         }) /
         2;
}

// One collective measured on groups of n ranks and fitted to the ring model
// t = steps·(n−1)·alpha + steps·(n−1)/n · bytes / bandwidth (steps = 2 for all-reduce, else 1).
struct CollFit {
  CollOp op;
  int n = 0;
  double small_ms = 0, big_ms = 0;  // 1 double per member; kBigBytes in all
  int64_t big_bytes = 0;
  double alpha_ms = 0, bandwidth_gb_per_s = 0;
};

const char* name(CollOp op) {
  switch (op) {
    case CollOp::REDUCE_SCATTER: return "reduce-scatter";
    case CollOp::ALL_GATHER: return "all-gather";
    case CollOp::ALL_REDUCE: return "all-reduce";
  }
  return "?";
}

// Runs `op` on `total` doubles in all (the model's bytes: reduce-scatter's input, all-gather's
// output, all-reduce's buffer) on `comm` of n members.
void run_coll(CollOp op, MPI_Comm comm, int n, int64_t total, std::vector<double>& a, std::vector<double>& b) {
  const int per = static_cast<int>(total / n);
  switch (op) {
    case CollOp::REDUCE_SCATTER:
      MPI_Reduce_scatter_block(a.data(), b.data(), per, MPI_DOUBLE, MPI_SUM, comm);
      return;
    case CollOp::ALL_GATHER:
      MPI_Allgather(a.data(), per, MPI_DOUBLE, b.data(), per, MPI_DOUBLE, comm);
      return;
    case CollOp::ALL_REDUCE:
      MPI_Allreduce(a.data(), b.data(), static_cast<int>(total), MPI_DOUBLE, MPI_SUM, comm);
      return;
  }
}

// Every world rank calls this (collective over the world); members of a group of n measure,
// the ranks left over (np % n) only take part in the world-wide steps. Rank 0 is in group 0.
CollFit measure(CollOp op, int n, int me, int np) {
  MPI_Comm comm = MPI_COMM_NULL;
  const int groups = np / n;
  MPI_Comm_split(MPI_COMM_WORLD, me < groups * n ? me / n : MPI_UNDEFINED, me, &comm);
  CollFit f{op, n};
  f.big_bytes = kBigBytes - kBigBytes % (8 * n);
  const int64_t big = f.big_bytes / 8;
  std::vector<double> a(static_cast<size_t>(big), 1.0), b(static_cast<size_t>(big), 0.0);
  if (comm != MPI_COMM_NULL) {
    f.small_ms = median_ms(comm, [&] { run_coll(op, comm, n, n, a, b); });
    f.big_ms = median_ms(comm, [&] { run_coll(op, comm, n, big, a, b); });
    MPI_Comm_free(&comm);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double steps = op == CollOp::ALL_REDUCE ? 2.0 : 1.0;
  f.alpha_ms = f.small_ms / (steps * (n - 1));
  f.bandwidth_gb_per_s = steps * (n - 1) / n * static_cast<double>(f.big_bytes) / std::max(f.big_ms - f.small_ms, 1e-6) / 1e6;
  return f;
}

std::string fit_comment(const CollFit& f, const char* group) {
  return fmt::format("  # measured: {} over {} ranks ({} group): 1 double per rank {:.4f} ms, {} bytes {:.4f} ms → "
                     "alpha {:.6f} ms per ring step, {:.4f} GB/s\n",
                     name(f.op), f.n, group, f.small_ms, f.big_bytes, f.big_ms, f.alpha_ms, f.bandwidth_gb_per_s);
}

// The p2p_latency_ms key with its comment: replay's own P2P time when measured (`over`), else
// MPI's ping-pong latency `lat`.
std::string p2p_latency_lines(const RuntimeOverhead* over, int peer, double lat) {
  if (over && over->batches > 0)
    return fmt::format("  # measured: replay's own P2P time, matched -> end (X), replayed with the communication model "
                       "zero, over {} BATCHes: mean {:.6f}, median {:.6f}, mean excess over the mean, E[(X - mean)+]: "
                       "{:.6f}; the self-consistent floor m, the least with E[max(X, m)] <= {} m (replay's expected "
                       "floored transfer within {} % of the simulator's), has E[(X - m)+]: {:.6f}; MPI's alone, 8-byte "
                       "ping-pong r0 <-> r{}, median of {} one-way times: {:.6f}\n  p2p_latency_ms: {:.6f}\n",
                       over->batches, over->p2p_mean_ms, over->p2p_median_ms, over->p2p_excess_ms, 1 + kFloorTolerance,
                       100 * kFloorTolerance, over->p2p_floor_excess_ms, peer, kReps, lat, over->p2p_floor_ms);
  return fmt::format("  # measured: 8-byte ping-pong r0 <-> r{}, median of {} one-way times\n  p2p_latency_ms: {:.6f}\n",
                     peer, kReps, lat);
}

}  // namespace

int run_calibrate(const PipelineConfig& cfg) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  int me = 0, np = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const World w = cfg.world(true);
  const int need = std::max({2, w.shard, w.replicate});
  if (np < need) {
    if (me == 0)
      std::cerr << fmt::format("replay --calibrate: needs at least {} processes (P2P needs 2, the shard group {}, the "
                               "replicate group {}); run with --np {}\n", need, w.shard, w.replicate, need);
    MPI_Finalize();
    return 2;
  }
  // P2P between pipeline neighbours as the world places them (rank 0 and PP rank 1's first).
  const int peer = w.pp > 1 && w.dp() < np ? w.dp() : 1;
  const double lat = ping_pong_ms(me, peer, 8);
  const double big = ping_pong_ms(me, peer, kBigBytes);
  const double bw = static_cast<double>(kBigBytes) / std::max(big - lat, 1e-6) / 1e6;  // GB/s = bytes/ms / 1e6
  // Replay's own transfer costs and issue rate, on the config's programs (needs the config's world).
  const bool whole_world = np == static_cast<int>(int64_t{w.pp} * w.dp());
  // A value and a pointer to it (null: not measured), not a std::optional: GCC 12 at -O2 warns
  // -Wmaybe-uninitialized on the optional's payload read under its own has_value() (a false positive).
  RuntimeOverhead measured;
  if (whole_world) measured = runtime_overhead(cfg, me, kOverheadSteps);
  const RuntimeOverhead* const over = whole_world ? &measured : nullptr;
  std::vector<CollFit> shard, repl;
  if (w.shard >= 2)
    for (CollOp op : {CollOp::REDUCE_SCATTER, CollOp::ALL_GATHER}) shard.push_back(measure(op, w.shard, me, np));
  if (w.replicate >= 2) repl.push_back(measure(CollOp::ALL_REDUCE, w.replicate, me, np));
  if (me == 0) {
    const auto it = cfg.extra_sections.find("cost");
    const sim::CostSpec c = it == cfg.extra_sections.end() ? sim::CostSpec{} : sim::parse_cost_spec(it->second, cfg.num_stages());
    std::string out = fmt::format(
        "# ppstream replay --calibrate: {} processes, MPI settings as replay uses them (docs/replay.md)\n"
        "cost:\n"
        "{}"
        "  # measured: 4 MiB ping-pong r0 <-> r{}, bytes / (time - latency{})\n"
        "  p2p_bandwidth_gb_per_s: {:.4f}\n",
        np, p2p_latency_lines(over, peer, lat), peer, over ? " of the ping-pong" : "", bw);
    std::vector<double> alphas;
    for (const CollFit& f : shard) out += fit_comment(f, "shard"), alphas.push_back(f.alpha_ms);
    for (const CollFit& f : repl) out += fit_comment(f, "replicate"), alphas.push_back(f.alpha_ms);
    std::sort(alphas.begin(), alphas.end());
    if (alphas.empty())
      out += fmt::format("  # assumed (kept from the config): no shard or replicate group of 2 or more ranks to measure\n"
                         "  collective_alpha_ms: {}\n", c.collective_alpha_ms);
    else if (over && over->collectives > 0)
      out += fmt::format("  # measured: replay's own time per ring step of a collective X, (end - last arrival) / ring "
                         "steps, replayed with the communication model zero, over {}: mean {:.6f}, median {:.6f}, mean "
                         "excess over the mean, E[(X - mean)+]: {:.6f}; the self-consistent floor m, the least with "
                         "E[max(X, m)] <= {} m, has E[(X - m)+]: {:.6f}; MPI's alone, the median of the {} per-step "
                         "latencies above: {:.6f}\n  collective_alpha_ms: {:.6f}\n",
                         over->collectives, over->collective_step_mean_ms, over->collective_step_median_ms,
                         over->collective_step_excess_ms, 1 + kFloorTolerance, over->collective_step_floor_excess_ms,
                         alphas.size(), alphas[alphas.size() / 2], over->collective_step_floor_ms);
    else
      out += fmt::format("  # measured: median of the {} per-step latencies above (the model has one alpha)\n"
                         "  collective_alpha_ms: {:.6f}\n", alphas.size(), alphas[alphas.size() / 2]);
    if (shard.empty())
      out += fmt::format("  # assumed (kept from the config): the shard group has 1 rank (no reduce-scatter, all-gather)\n"
                         "  shard_bandwidth_gb_per_s: {}\n", c.shard_bandwidth_gb_per_s);
    else
      out += fmt::format("  # measured: mean of the reduce-scatter and all-gather bandwidths over {} ranks\n"
                         "  shard_bandwidth_gb_per_s: {:.4f}\n",
                         w.shard, (shard[0].bandwidth_gb_per_s + shard[1].bandwidth_gb_per_s) / 2);
    if (repl.empty())
      out += fmt::format("  # assumed (kept from the config): the replicate group has 1 rank (no all-reduce)\n"
                         "  replicate_bandwidth_gb_per_s: {}\n", c.replicate_bandwidth_gb_per_s);
    else
      out += fmt::format("  # measured: the all-reduce bandwidth over {} ranks\n"
                         "  replicate_bandwidth_gb_per_s: {:.4f}\n", w.replicate, repl[0].bandwidth_gb_per_s);
    out += fmt::format(
        "  # assumed (kept from the config): compute and sizes\n"
        "  forward_ms_per_layer: {}\n  backward_ms_per_layer: {}\n  optimizer_ms: {}\n"
        "  moe_dispatch_ms_per_layer: {}\n  moe_combine_ms_per_layer: {}\n"
        "  activation_bytes: {}\n  grad_bytes_per_layer: {}\n  param_bytes_per_layer: {}\n",
        c.forward_ms_per_layer, c.backward_ms_per_layer, c.optimizer_ms, c.moe_dispatch_ms_per_layer,
        c.moe_combine_ms_per_layer, c.activation_bytes, c.grad_bytes_per_layer, c.param_bytes_per_layer);
    if (over && over->longest_program > 0)
      out += fmt::format("  # measured: replay's host issue rate, the {} programs replayed with the communication model zero "
                         "(median step of {}, {:.3f} ms): per rank the last instruction's issue time / its instruction "
                         "count (the simulator issues the k-th at (k+1)*h), median over ranks\n  host_issue_ms: {:.6f}\n",
                         to_string(over->policy), kOverheadSteps, over->step_ms, over->host_issue_ms);
    else
      out += fmt::format("  # assumed (kept from the config): replay's own costs are measured on the config's "
                         "world ({} processes; this run has {})\n  host_issue_ms: {}\n",
                         int64_t{w.pp} * w.dp(), np, c.host_issue_ms);
    std::cout << out << std::flush;
  }
  MPI_Finalize();
  return 0;
}

}  // namespace ppstream::replay
