// replay: executes the engine's verified per-rank stream programs on real processes over MPI,
// one process per rank, each stream an in-order queue on its own thread (the emulated device),
// with real non-blocking P2P and collectives on deterministic buffers whose results are checked
// exactly. Compute occupies its stream for the cost model's duration (a sleep). The measured
// per-instruction times give the same metrics as `simulate` (docs/replay.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ppstream/config/config.h"
#include "ppstream/engine/engine.h"
#include "ppstream/program/ir.h"

namespace ppstream::replay {

// How long communication occupies its stream (docs/replay.md, "Communication time").
enum class CommTime : uint8_t {
  MODEL,  // the real MPI operation, then the cost model's transfer time on top (default)
  REAL,   // the real MPI operation only (use with a calibrated `cost:` section)
};

// What a compute instruction (F, B, OPT_STEP, RESHARD) does (docs/replay.md, "Compute").
enum class ComputeMode : uint8_t {
  SLEEP,  // occupy the stream for the cost model's duration, burning no CPU (default)
  GEMM,   // run round(model / measured GEMM time) real n x n matrix multiplies; time as measured
};

// Fault injection for the failure tests (never used by a normal run).
struct Fault {
  enum class Kind : uint8_t { NONE, HANG, DIE } kind = Kind::NONE;
  int32_t rank = 0;  // HANG: the host stops issuing at its program's middle; DIE: _exit mid-step
};

struct ReplayOptions {
  std::vector<ReducePolicy> policies;  // empty: the config's reduce_grad
  int32_t steps = 1;                   // measured steps per policy (metrics: the median step)
  double timeout_s = 120;              // per policy run; a hang past it names every unfinished rank
  std::string trace_dir;               // "" = none; else policy_trace_dir(…)/replay.POLICY.rankN.json
  bool json = false;
  int64_t max_buffer_bytes = 65536;    // cap on every P2P / collective buffer (scale documented)
  CommTime comm_time = CommTime::MODEL;
  double poll_us = 50;                 // progress thread sleep between MPI_Testsome rounds
  // false (default): the host issues the step's program from the step's start, in the step.
  // true (--issue ahead): during the lead before the start, each stamp still the elapsed time of
  // its own issuing (the simulator's host model: the k-th instruction at the host's cumulative
  // cost), so every rank's issue burst is over before the step's transfers need the shared
  // cores (docs/replay.md, "Host issue and overhead").
  bool issue_ahead = false;
  ComputeMode compute = ComputeMode::SLEEP;
  int32_t gemm_n = 128;                // GEMM: matrix side (doubles)
  Fault fault;
};

// One rank's measured timings of one step: per instruction issue/ready/start/end (ms from the
// step's common start). Same meaning as the engine's InstrTiming.
using RankTimings = std::vector<InstrTiming>;

// Builds the expanded program set replay runs (every DP rank, rank = pp_rank * dp + dp_index)
// for one policy and checks it: throws VerifyError listing every violation when the
// verifier rejects the one-replica set (replay never runs an unverified program).
ProgramSet verified_world(const PipelineConfig& cfg, ReducePolicy policy);
// Throws VerifyError ("replay: the WHAT programs do not verify; refusing to run them: N
// violation(s):" and every violation) unless `set` verifies.
void require_verified(const ProgramSet& set, const std::string& what);

// Worker entry (inside mpirun/srun): MPI_Init_thread, run, MPI_Finalize. Returns the exit code.
int run_worker(const PipelineConfig& cfg, const ReplayOptions& opts);

// Launcher: re-executes `argv` under `mpirun -np N` (with the allow-run-as-root settings when
// root, --oversubscribe, the MCA settings of docs/replay.md) and waits; kills the launched
// process group past opts.timeout_s + grace. Returns the exit code to use.
int launch(const std::vector<std::string>& argv, int32_t np, const std::string& hostfile, double timeout_s);

// Where policy `policy`'s traces go under `trace_dir` when `policies` policies run: trace_dir
// itself for one, trace_dir/POLICY (DIR/inline, DIR/async) for several, so that `ppstream diff
// DIR/inline DIR/async` compares them. Creates the directory and its parents, like `train --out`;
// throws std::invalid_argument naming the path when it cannot (e.g. a file is in the way).
std::string policy_trace_dir(const std::string& trace_dir, ReducePolicy policy, size_t policies);

// True inside an mpirun (OMPI_COMM_WORLD_SIZE) or srun (SLURM_PROCID/PMI_RANK) allocation.
bool under_launcher();

// `--calibrate`: measures P2P latency/bandwidth and collective costs (worker side, rank 0
// prints a `cost:` section). Returns the exit code.
int run_calibrate(const PipelineConfig& cfg);

}  // namespace ppstream::replay
