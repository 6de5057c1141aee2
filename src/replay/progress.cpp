#include "replay/progress.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "replay/clock.h"

namespace ppstream::replay {

void Job::wait() {
  std::unique_lock lock(mu);
  cv.wait(lock, [this] { return finished; });
}

Progress::Progress(std::array<MPI_Comm, 3> p2p, std::vector<MPI_Comm> comms, double poll_us)
    : p2p_(p2p), comms_(std::move(comms)), poll_us_(poll_us) {
  waiting_coll_.resize(comms_.size());
  next_seq_.assign(comms_.size(), 0);
}

void Progress::submit(Job* job) {
  std::lock_guard lock(mu_);
  incoming_.push_back(job);
}

void Progress::reset_sequences() { std::fill(next_seq_.begin(), next_seq_.end(), 0); }

void Progress::take_new() {
  std::deque<Job*> fresh;
  {
    std::lock_guard lock(mu_);
    fresh.swap(incoming_);
  }
  for (Job* job : fresh) {
    active_.push_back(job);
    if (job->coll) {
      job->done.assign(2, 0);
      waiting_coll_.at(static_cast<size_t>(job->coll->comm))[job->coll->seq] = job;
    } else {
      post_p2p(job);
    }
  }
  post_ready_collectives();
}

void Progress::post_ready_collectives() {
  for (size_t c = 0; c < comms_.size(); ++c) {
    auto& waiting = waiting_coll_[c];
    while (!waiting.empty() && waiting.begin()->first == next_seq_[c]) {
      Job* job = waiting.begin()->second;
      waiting.erase(waiting.begin());
      ++next_seq_[c];
      post_coll(job);
    }
  }
}

void Progress::track(MPI_Request req, Job* job, size_t entry) {
  reqs_.push_back(req);
  owners_.emplace_back(job, entry);
}

void Progress::post_p2p(Job* job) {
  job->done.assign(job->p2p.size() * kMpiPerP2P, 0);
  for (size_t k = 0; k < job->p2p.size(); ++k) {
    P2PRequest& r = job->p2p[k];
    MPI_Request req[kMpiPerP2P];
    const int n = static_cast<int>(r.buf->size());
    // Stamps: the sender's post time travels on p2p_[1], the receiver's on p2p_[2].
    MPI_Comm mine = p2p_[r.send ? 1 : 2], theirs = p2p_[r.send ? 2 : 1];
    if (r.send) MPI_Isend(r.buf->data(), n, MPI_DOUBLE, r.peer, r.tag, p2p_[0], &req[0]);
    else MPI_Irecv(r.buf->data(), n, MPI_DOUBLE, r.peer, r.tag, p2p_[0], &req[0]);
    MPI_Isend(&r.post_ms, 1, MPI_DOUBLE, r.peer, r.tag, mine, &req[1]);
    MPI_Irecv(&r.peer_post_ms, 1, MPI_DOUBLE, r.peer, r.tag, theirs, &req[2]);
    for (size_t j = 0; j < kMpiPerP2P; ++j) track(req[j], job, k * kMpiPerP2P + j);
  }
  if (job->p2p.empty()) {
    std::erase(active_, job);
    std::lock_guard lock(job->mu);
    job->finished = true;
    job->cv.notify_all();
  }
}

void Progress::post_coll(Job* job) {
  const CollRequest& c = *job->coll;
  MPI_Comm comm = comms_.at(static_cast<size_t>(c.comm));
  MPI_Request req;
  // The group's last arrival first (same communicator, so the same order on every member).
  MPI_Iallreduce(&job->coll->arrival_ms, &job->coll->last_arrival_ms, 1, MPI_DOUBLE, MPI_MAX, comm, &req);
  track(req, job, 0);
  switch (c.op) {
    case CollOp::REDUCE_SCATTER:
      MPI_Ireduce_scatter_block(c.in->data(), c.out->data(), static_cast<int>(c.out->size()), MPI_DOUBLE, MPI_SUM, comm, &req);
      break;
    case CollOp::ALL_REDUCE:
      MPI_Iallreduce(c.in->data(), c.out->data(), static_cast<int>(c.in->size()), MPI_DOUBLE, MPI_SUM, comm, &req);
      break;
    case CollOp::ALL_GATHER:
      MPI_Iallgather(c.in->data(), static_cast<int>(c.in->size()), MPI_DOUBLE, c.out->data(),
                     static_cast<int>(c.in->size()), MPI_DOUBLE, comm, &req);
      break;
  }
  track(req, job, 1);
}

bool Progress::test_some() {
  if (reqs_.empty()) return false;
  std::vector<int> idx(reqs_.size());
  int count = 0;
  MPI_Testsome(static_cast<int>(reqs_.size()), reqs_.data(), &count, idx.data(), MPI_STATUSES_IGNORE);
  if (count <= 0) return false;
  for (int k = 0; k < count; ++k) {
    auto [job, entry] = owners_[static_cast<size_t>(idx[static_cast<size_t>(k)])];
    job->done[entry] = 1;
    if (std::all_of(job->done.begin(), job->done.end(), [](char d) { return d != 0; })) {
      std::erase(active_, job);
      std::lock_guard lock(job->mu);
      job->finished = true;
      job->cv.notify_all();
    }
  }
  // Drop completed requests (MPI set them to MPI_REQUEST_NULL).
  size_t w = 0;
  for (size_t r = 0; r < reqs_.size(); ++r)
    if (reqs_[r] != MPI_REQUEST_NULL) reqs_[w] = reqs_[r], owners_[w] = owners_[r], ++w;
  reqs_.resize(w);
  owners_.resize(w);
  return true;
}

bool Progress::run(const std::function<bool()>& finished, double deadline_ms) {
  const auto nap = std::chrono::duration<double, std::micro>(poll_us_);
  for (;;) {
    take_new();
    const bool progressed = test_some();
    if (reqs_.empty() && finished()) return true;
    if (now_ms() > deadline_ms) return false;
    if (!progressed) std::this_thread::sleep_for(nap);
  }
}

std::vector<const Job*> Progress::outstanding() const { return {active_.begin(), active_.end()}; }

}  // namespace ppstream::replay
