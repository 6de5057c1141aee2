// The MPI progress thread of one replay process: the only thread that calls MPI (the process
// runs at MPI_THREAD_FUNNELED, and this is the main thread). Stream threads submit jobs (a P2P
// batch, one collective phase) and block on the job; the progress thread posts them as
// non-blocking MPI operations, completes them with MPI_Testsome and sleeps `poll_us` between
// rounds that completed nothing, so idle ranks do not spin (docs/replay.md, "Progress").
// Collectives on one communicator are posted in the program's order (their `seq`), as every
// member must post them in the same order, whichever stream submits first.
#pragma once

#include <mpi.h>

#include <array>
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

// One P2P op. Beside the data, both sides exchange their post times (ms from the step start)
// on two stamp communicators, so each knows when the op was matched — the later post — as the
// engine defines it (docs/replay.md, "Communication time").
struct P2PRequest {
  bool send = true;
  int peer = 0;            // rank in the P2P communicator (= world rank)
  int tag = 0;
  std::vector<double>* buf = nullptr;
  double post_ms = 0;       // this side's post time
  double peer_post_ms = 0;  // the mirror's post time (filled on completion)
};
inline constexpr size_t kMpiPerP2P = 3;  // data, own stamp, peer stamp

enum class CollOp : uint8_t { REDUCE_SCATTER, ALL_REDUCE, ALL_GATHER };

struct CollRequest {
  CollOp op = CollOp::ALL_REDUCE;
  int comm = 0;                         // index into Progress::comms
  int64_t seq = 0;                      // position in the communicator's program order
  const std::vector<double>* in = nullptr;
  std::vector<double>* out = nullptr;   // REDUCE_SCATTER: in.size()/n; ALL_GATHER: in.size()*n
  double arrival_ms = 0;                // this member's arrival (MPI_MAX-reduced before the data)
  double last_arrival_ms = 0;           // the group's last arrival (filled on completion)
};

// A submitted unit of communication; the submitting stream thread waits on it.
struct Job {
  std::vector<P2PRequest> p2p;
  std::optional<CollRequest> coll;
  // Filled by the progress thread:
  std::vector<char> done;  // per MPI request: kMpiPerP2P per P2P op; collective: arrival, data
  bool finished = false;
  std::mutex mu;
  std::condition_variable cv;
  void wait();
};

class Progress {
 public:
  // p2p[0] carries data, p2p[1] the sender's post times, p2p[2] the receiver's.
  Progress(std::array<MPI_Comm, 3> p2p, std::vector<MPI_Comm> comms, double poll_us);
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
  void track(MPI_Request req, Job* job, size_t entry);
  bool test_some();

  std::array<MPI_Comm, 3> p2p_;
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
