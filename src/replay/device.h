// The emulated device of one replay rank for one step: a host thread issues the program in
// order into per-stream FIFO queues; each stream is a thread that runs its queue (compute =
// sleep for the cost model's duration, RECORD/WAIT = device events that block only the waiting
// stream, BATCH/collectives = jobs for the MPI progress thread). The calling thread runs MPI
// progress until every stream has drained or the deadline passes (docs/replay.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ppstream/engine/engine.h"
#include "ppstream/replay/replay.h"
#include "ppstream/sim/cost_model.h"
#include "replay/gemm.h"
#include "replay/plan.h"
#include "replay/progress.h"

namespace ppstream::replay {

// How many received buffers this rank compared exactly with what they must hold, per kind
// (every P2P receive, every REDUCE_GRAD result, every UNSHARD result), so a run can prove it
// checked each one (docs/replay.md, "Buffers and checks").
struct CheckCounts {
  int64_t p2p_receives = 0;
  int64_t reductions = 0;
  int64_t unshards = 0;
  int64_t failed = 0;
};

struct StepResult {
  bool completed = false;
  CheckCounts checks;
  std::vector<InstrTiming> timing;  // ms from the step start
  std::vector<std::string> errors;  // failed checks: "r3 #45 reduce REDUCE_GRAD s7: element 2 is 40, expected 41"
  std::string hang_report;          // when !completed: every unfinished stream of this rank
};

class Device {
 public:
  Device(const ProgramSet& set, const RankPlan& plan, const sim::SimCostModel& cost, Progress& progress,
         const ReplayOptions& opts);
  // Runs step `step` starting at absolute time t0_ms; gives up at deadline_ms.
  StepResult run_step(int32_t step, double t0_ms, double deadline_ms);
  // GEMM mode: the measured time of one multiply (ms, median of 5 at construction); else 0.
  double gemm_ms() const { return gemm_ms_; }

 private:
  struct Stream {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<int32_t> queue;
    std::atomic<int32_t> current{-1};  // instruction being run, -1 none
    std::atomic<int32_t> done{0};      // instructions completed
    std::atomic<Job*> job{nullptr};    // the communication it waits for (for the hang report)
    double last_end_ms = 0;            // end of the previous instruction on the stream
  };

  // Issues the program in order; each stamp is the time since `host_start_ms` (absolute).
  void host(double host_start_ms);
  void run_stream(size_t s);
  void execute(int32_t k);
  void compute(int32_t k);
  void batch(int32_t k);
  void collective(int32_t k);
  void finish_comm(InstrTiming& t, double model_end_ms);
  void fire(int32_t record, double at_ms);  // RECORD instruction `record` completed at `at_ms`
  // The device time of RECORD `record` (InstrPlan::record of a WAIT), once it has completed.
  double wait_record(int32_t record);
  // Counts one exact check of `kind` and records `bad` (if any) as a failure of instruction k.
  void checked(int32_t k, int64_t CheckCounts::*kind, const std::optional<std::string>& bad);
  void error(int32_t k, const std::string& what);  // records a failed check of instruction k
  double now() const;
  bool all_done() const;
  std::string report() const;

  const ProgramSet& set_;
  const Program& prog_;
  const RankPlan& plan_;
  const sim::SimCostModel& cost_;
  Progress& progress_;
  const ReplayOptions& opts_;
  int32_t step_ = 0;
  double t0_ = 0;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<InstrTiming> timing_;
  std::mutex event_mu_;
  std::condition_variable event_cv_;
  std::vector<double> fired_;  // per instruction: a RECORD's device time, or kNotYet (engine.h)
  std::mutex err_mu_;
  std::vector<std::string> errors_;
  CheckCounts checks_;  // guarded by err_mu_
  std::vector<std::unique_ptr<Gemm>> gemm_;  // GEMM mode: one per stream (its own buffers)
  double gemm_ms_ = 0;
};

}  // namespace ppstream::replay
