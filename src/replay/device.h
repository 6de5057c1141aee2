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
#include <string>
#include <vector>

#include "ppstream/engine/engine.h"
#include "ppstream/replay/replay.h"
#include "ppstream/sim/cost_model.h"
#include "replay/plan.h"
#include "replay/progress.h"

namespace ppstream::replay {

struct StepResult {
  bool completed = false;
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

  void host();
  void run_stream(size_t s);
  void execute(int32_t k);
  void compute(int32_t k);
  void batch(int32_t k);
  void collective(int32_t k);
  void finish_comm(InstrTiming& t, double model_end_ms);
  void fire(int32_t event, double at_ms);
  double wait_event(int32_t event);  // the event's device time, once it has fired
  void fail(int32_t k, const std::string& what);
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
  std::vector<double> fired_;  // per event: device time it fired, -1 not yet
  std::mutex err_mu_;
  std::vector<std::string> errors_;
};

}  // namespace ppstream::replay
