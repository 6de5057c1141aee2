// `ppstream-replay CONFIG` (also reached as `ppstream replay CONFIG`): run the configuration's
// verified stream programs on real processes over MPI (one per rank) and report measured figures
// beside the simulator's. Outside an mpirun/srun allocation it launches `mpirun` on this
// executable; inside one it is a worker. Its own executable, so that only it links Open MPI
// (built when CMake finds MPI; docs/replay.md).
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "config_args.h"
#include "run_app.h"
#include "ppstream/replay/replay.h"
#include "ppstream/sim/simulate.h"

namespace ppstream::cli {
namespace {

replay::Fault parse_fault(const std::string& text) {
  replay::Fault f;
  if (text.empty()) return f;
  const auto colon = text.find(":r");
  const std::string kind = text.substr(0, colon);
  if (colon == std::string::npos || (kind != "hang" && kind != "die"))
    throw std::invalid_argument("--fault " + text + ": expected hang:rN or die:rN");
  f.kind = kind == "hang" ? replay::Fault::Kind::HANG : replay::Fault::Kind::DIE;
  f.rank = std::stoi(text.substr(colon + 2));
  return f;
}

// replay's options and its callback on `cmd`; the launcher re-executes argv under mpirun.
void configure(CLI::App* cmd, int& exit_code, int argc, char** argv) {
  struct Args {
    ConfigArgs config;
    replay::ReplayOptions o;
    std::string comm_time = "model", compute = "sleep", issue = "in-step", fault, hostfile;
    int32_t np = 0;
    bool calibrate = false;
  };
  auto args = std::make_shared<Args>();
  std::vector<std::string> all(argv, argv + argc);
  args->config.add_to(cmd, false);  // CONFIG or --set keys alone
  cmd->get_option("--reduce-grad")->description("reduction placement: inline | async | both");
  cmd->add_option("--steps", args->o.steps, "measured steps per policy (metrics: the median step; every step in the traces)")->check(CLI::Range(1, 1000));
  cmd->add_option("--timeout", args->o.timeout_s, "seconds per policy before a hang is reported (names every unfinished rank)")
      ->check(CLI::Range(1.0, 86400.0));
  cmd->add_option("--trace", args->o.trace_dir,
                  "directory for per-rank traces replay.POLICY.rankN.json (created; with --reduce-grad both: DIR/inline, DIR/async)");
  cmd->add_flag("--json", args->o.json, "print simulate --json's document (measured) with the simulated one beside it");
  cmd->add_option("--np", args->np, "processes (default: the config's world, pp x dp)")->check(CLI::Range(1, 65536));
  cmd->add_option("--hostfile", args->hostfile, "mpirun hostfile: spread the ranks over machines")->check(CLI::ExistingFile);
  cmd->add_option("--max-buffer-bytes", args->o.max_buffer_bytes, "cap on each P2P / collective buffer")->check(CLI::Range(int64_t{8}, int64_t{1} << 30));
  cmd->add_option("--comm-time", args->comm_time, "model: MPI op + the cost model's transfer time; real: MPI op only")
      ->check(CLI::IsMember({"model", "real"}));
  cmd->add_option("--compute", args->compute, "sleep: compute occupies its stream for the cost model's time; gemm: real matrix multiplies sized to it")
      ->check(CLI::IsMember({"sleep", "gemm"}));
  cmd->add_option("--gemm-n", args->o.gemm_n, "gemm: matrix side (n x n doubles)")->check(CLI::Range(8, 4096));
  cmd->add_option("--poll-us", args->o.poll_us, "progress thread sleep between MPI_Testsome rounds (µs)")->check(CLI::Range(1.0, 100000.0));
  cmd->add_option("--issue", args->issue,
                  "in-step (default): the host issues each step's program from the step's start; ahead: before the "
                  "step starts, each instruction stamped with its own issue time")
      ->check(CLI::IsMember({"ahead", "in-step"}));
  cmd->add_flag("--calibrate", args->calibrate, "measure P2P and collective costs here; print a cost: section");
  cmd->add_option("--fault", args->fault, "testing: hang:rN (rank N stops issuing) or die:rN (rank N is killed)");
  cmd->callback([args, all, &exit_code] {
    ConfigArgs ca = args->config;
    const std::string policy = ca.reduce_grad;
    if (policy == "both") ca.reduce_grad.clear();
    args->o.policies = sim::parse_policies(policy);
    args->o.comm_time = args->comm_time == "real" ? replay::CommTime::REAL : replay::CommTime::MODEL;
    args->o.compute = args->compute == "gemm" ? replay::ComputeMode::GEMM : replay::ComputeMode::SLEEP;
    args->o.fault = parse_fault(args->fault);
    args->o.issue_ahead = args->issue == "ahead";
    const PipelineConfig cfg = ca.load();
    if (replay::under_launcher()) {
      exit_code = args->calibrate ? replay::run_calibrate(cfg) : replay::run_worker(cfg, args->o);
      return;
    }
    // Refuse what the verifier rejects before starting any process.
    for (ReducePolicy p : args->o.policies.empty() ? std::vector<ReducePolicy>{cfg.reduce_grad} : args->o.policies)
      (void)replay::verified_world(cfg, cfg.mode == DPMode::NONE ? ReducePolicy::NONE : p);
    // Create the trace directories now: a bad path is refused before any process starts.
    if (!args->o.trace_dir.empty())
      for (ReducePolicy p : args->o.policies.empty() ? std::vector<ReducePolicy>{cfg.reduce_grad} : args->o.policies)
        (void)replay::policy_trace_dir(args->o.trace_dir, p, std::max<size_t>(1, args->o.policies.size()));
    const World w = cfg.world(true);
    const int32_t np = args->np > 0 ? args->np : w.pp * w.dp();
    exit_code = replay::launch(all, np, args->hostfile, args->o.timeout_s * static_cast<double>(std::max<size_t>(1, args->o.policies.size())) * args->o.steps);
  });
}

}  // namespace
}  // namespace ppstream::cli

int main(int argc, char** argv) {
  // Named as the documented command (usage lines read `ppstream replay`).
  CLI::App app{"run the verified stream programs over MPI with real concurrency; measured vs simulated", "ppstream replay"};
  int exit_code = 0;
  ppstream::cli::configure(&app, exit_code, argc, argv);
  return ppstream::cli::run_app(app, argc, argv, exit_code);
}
