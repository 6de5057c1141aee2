// The MPI progress thread of one replay process: the only thread that calls MPI (the process
// runs at MPI_THREAD_FUNNELED, and this is the main thread). Stream threads submit jobs (a P2P
// batch, one collective phase) and block on the job; the progress thread posts them as
// non-blocking MPI operations, completes them with MPI_Testsome and sleeps `poll_us` between
// rounds that completed nothing, so idle ranks do not spin (docs/replay.md, "Progress").
// Collectives on one communicator are posted in the program's order (their `seq`), as every
// member must post them in the same order, whichever stream submits first.
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ppstream::replay {

struct P2PRequest {
  bool send = true;
  int peer = 0;            // rank in the P2P communicator (= world rank)
  int tag = 0;
  std::vector<double>* buf = nullptr;
};

enum class CollOp : uint8_t { REDUCE_SCATTER, ALL_REDUCE, ALL_GATHER };

struct CollRequest {
  CollOp op = CollOp::ALL_REDUCE;
  int comm = 0;                         // index into Progress::comms
  int64_t seq = 0;                      // position in the communicator's program order
  const std::vector<double>* in = nullptr;
  std::vector<double>* out = nullptr;   // REDUCE_SCATTER: in.size()/n; ALL_GATHER: in.size()*n
};

// A submitted unit of communication; the submitting stream thread waits on it.
struct Job {
  std::vector<P2PRequest> p2p;
  std::optional<CollRequest> coll;
  // Filled by the progress thread:
  std::vector<char> done;  // per P2P request (collective: one entry)
  bool finished = false;
  std::mutex mu;
  std::condition_variable cv;
  void wait();
};

class Progress {
 public:
  Progress(MPI_Comm p2p_comm, std::vector<MPI_Comm> comms, double poll_us);
  // From stream threads: hands the job over (it must stay alive until finished).
  void submit(Job* job);
  // On the MPI thread: runs until `finished()` holds (checked between rounds) or `deadline_ms`
  // passes; returns false on the deadline.
  bool run(const std::function<bool()>& finished, double deadline_ms);
  // Outstanding jobs (for the hang report, on the MPI thread after run() returned false).
  std::vector<const Job*> outstanding() const;
  void reset_sequences();  // a new step: every communicator's order starts at 0 again

 private:
  void take_new();
  void post_ready_collectives();
  void post_p2p(Job* job);
  void post_coll(Job* job);
  bool test_some();

  MPI_Comm p2p_comm_;
  std::vector<MPI_Comm> comms_;
  double poll_us_;
  std::mutex mu_;
  std::deque<Job*> incoming_;  // guarded by mu_
  std::vector<std::map<int64_t, Job*>> waiting_coll_;  // per comm, by seq
  std::vector<int64_t> next_seq_;
  std::vector<MPI_Request> reqs_;
  std::vector<std::pair<Job*, size_t>> owners_;  // per request: job and its entry in job->done
  std::vector<Job*> active_;
};

}  // namespace ppstream::replay
