#include "replay/device.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <thread>

#include "ppstream/program/format.h"
#include "replay/clock.h"
#include "replay/contents.h"

namespace ppstream::replay {

Device::Device(const ProgramSet& set, const RankPlan& plan, const sim::SimCostModel& cost, Progress& progress,
               const ReplayOptions& opts)
    : set_(set), prog_(set.programs[plan.prog]), plan_(plan), cost_(cost), progress_(progress), opts_(opts) {
  if (opts.compute != ComputeMode::GEMM) return;
  for (size_t s = 0; s < plan.streams.size(); ++s) gemm_.push_back(std::make_unique<Gemm>(opts.gemm_n));
  if (!gemm_.empty()) gemm_ms_ = gemm_.front()->measure_ms(5);
}

double Device::now() const { return now_ms() - t0_; }

StepResult Device::run_step(int32_t step, double t0_ms, double deadline_ms) {
  step_ = step;
  t0_ = t0_ms;
  streams_.clear();
  for (size_t s = 0; s < plan_.streams.size(); ++s) streams_.push_back(std::make_unique<Stream>());
  timing_.assign(prog_.instrs.size(), InstrTiming{});
  fired_.assign(prog_.instrs.size(), kNotYet);
  errors_.clear();
  checks_ = {};
  // The threads start before the step (streams sleep to t0, then block on their queues), so
  // that creating them is not part of the step: a device's queues exist before work. The host
  // issues from t0, or (issue_ahead) at once, during the lead: its stamps are then the elapsed
  // time of its own issuing, so each instruction is issued in device time exactly when the
  // host would have issued it from t0, but the burst of every rank's host is over before the
  // step's transfers need the CPU (docs/replay.md, "Host issue and overhead").
  std::vector<std::thread> threads;
  for (size_t s = 0; s < streams_.size(); ++s)
    threads.emplace_back([this, s, t0_ms] {
      sleep_until_ms(t0_ms);
      run_stream(s);
    });
  std::thread host_thread([this, t0_ms] {
    if (!opts_.issue_ahead) sleep_until_ms(t0_ms);
    host(now_ms());
  });
  sleep_until_ms(t0_ms);
  StepResult r;
  r.completed = progress_.run([this] { return all_done(); }, deadline_ms);
  if (!r.completed) {
    r.hang_report = report();
    for (auto& t : threads) t.detach();  // blocked for good; the process exits after the report
    host_thread.detach();
    return r;
  }
  host_thread.join();
  for (auto& t : threads) t.join();
  r.timing = timing_;
  r.errors = errors_;
  r.checks = checks_;
  return r;
}

void Device::host(double host_start_ms) {
  const auto n = static_cast<int32_t>(prog_.instrs.size());
  const bool faulty = opts_.fault.kind != Fault::Kind::NONE && opts_.fault.rank == prog_.rank.v;
  for (int32_t k = 0; k < n; ++k) {
    if (faulty && k == n / 2) {
      if (opts_.fault.kind == Fault::Kind::DIE) std::raise(SIGKILL);
      return;  // HANG: the rest is never issued
    }
    Stream& s = *streams_[static_cast<size_t>(plan_.instrs[static_cast<size_t>(k)].stream)];
    std::lock_guard lock(s.mu);
    timing_[static_cast<size_t>(k)].issue_ms = now_ms() - host_start_ms;
    s.queue.push_back(k);
    s.cv.notify_one();
  }
}

void Device::run_stream(size_t sidx) {
  Stream& s = *streams_[sidx];
  const size_t total = plan_.stream_instrs[sidx].size();
  for (size_t n = 0; n < total; ++n) {
    int32_t k = 0;
    {
      std::unique_lock lock(s.mu);
      s.cv.wait(lock, [&] { return !s.queue.empty(); });
      k = s.queue.front();
      s.queue.pop_front();
    }
    s.current = k;
    // Ready as the engine defines it: issued and the previous instruction on the stream done.
    InstrTiming& t = timing_[static_cast<size_t>(k)];
    t.ready_ms = std::max(t.issue_ms, s.last_end_ms);
    execute(k);
    s.last_end_ms = t.end_ms;
    s.current = -1;
    ++s.done;
  }
}

void Device::execute(int32_t k) {
  const Instr& in = prog_.instrs[static_cast<size_t>(k)];
  InstrTiming& t = timing_[static_cast<size_t>(k)];
  switch (in.op) {
    case OpKind::F:
    case OpKind::B:
    case OpKind::I:  // split backward: priced by the cost model (cost.backward_input_fraction)
    case OpKind::W:
    case OpKind::RESHARD:
    case OpKind::OPT_STEP: compute(k); return;
    case OpKind::RECORD:
      t.start_ms = t.end_ms = t.ready_ms;  // device time: when the stream's earlier work ended
      fire(k, t.start_ms);
      return;
    case OpKind::WAIT:
      t.start_ms = t.end_ms = std::max(t.ready_ms, wait_record(plan_.instrs[static_cast<size_t>(k)].record));
      return;
    case OpKind::BATCH: batch(k); return;
    case OpKind::UNSHARD:
    case OpKind::REDUCE_GRAD: collective(k); return;
    case OpKind::COLLECTIVE: return;  // refused by make_plan (plan.cpp)
  }
}

// Compute starts when the stream is ready in device time (the previous instruction's end, or
// its issue) and ends its duration later; the thread sleeps to that end, so a thread woken
// late catches up instead of stretching the device timeline (docs/replay.md, "Device time").
// GEMM mode instead runs real multiplies from when the thread gets there (never before the
// stream is ready) and takes their measured end.
void Device::compute(int32_t k) {
  InstrTiming& t = timing_[static_cast<size_t>(k)];
  const double model_ms = cost_.compute_ms(prog_, prog_.instrs[static_cast<size_t>(k)]);
  if (opts_.compute == ComputeMode::GEMM) {
    sleep_until_ms(t0_ + t.ready_ms);
    t.start_ms = std::max(t.ready_ms, now());
    Gemm& g = *gemm_[static_cast<size_t>(plan_.instrs[static_cast<size_t>(k)].stream)];
    for (int64_t r = 0, n = g.reps_for(model_ms, gemm_ms_); r < n; ++r)
      if (auto bad = g.multiply()) {
        error(k, *bad);
        break;
      }
    t.end_ms = now();
    return;
  }
  t.start_ms = t.ready_ms;
  t.end_ms = t.start_ms + model_ms;
  if (t.end_ms > t.start_ms) sleep_until_ms(t0_ + t.end_ms);
}

void Device::batch(int32_t k) {
  const Instr& in = prog_.instrs[static_cast<size_t>(k)];
  const InstrPlan& ip = plan_.instrs[static_cast<size_t>(k)];
  InstrTiming& t = timing_[static_cast<size_t>(k)];
  std::vector<std::vector<double>> bufs(in.p2p.size(), std::vector<double>(static_cast<size_t>(plan_.p2p_elems), 0.0));
  Job job;
  t.start_ms = t.ready_ms;
  for (size_t j = 0; j < in.p2p.size(); ++j) {
    const P2POp& op = in.p2p[j];
    if (is_send(op.kind)) fill_p2p(bufs[j], prog_.rank.v, op, step_);
    job.p2p.push_back({is_send(op.kind), op.peer.v, ip.tags[j], &bufs[j], t.start_ms, 0.0});
  }
  Stream& s = *streams_[static_cast<size_t>(ip.stream)];
  s.job = &job;
  progress_.submit(&job);
  job.wait();
  s.job = nullptr;
  // Matched = the later of this post and every mirror's post (the engine's rule); the modelled
  // transfer runs from there unless the real one took longer.
  double matched = t.start_ms;
  for (const P2PRequest& r : job.p2p) matched = std::max(matched, r.peer_post_ms);
  finish_comm(t, matched + cost_.base_batch_ms(in));
  for (size_t j = 0; j < in.p2p.size(); ++j)
    if (!is_send(in.p2p[j].kind)) {
      const auto bad = check_p2p(bufs[j], prog_.rank, in.p2p[j], step_);
      checked(k, &CheckCounts::p2p_receives, bad ? std::optional(to_text(in.p2p[j]) + ": " + *bad) : std::nullopt);
    }
}

void Device::finish_comm(InstrTiming& t, double model_end_ms) {
  // The real operation's completion, or the modelled one when later (device time; the thread
  // sleeps to it so that what follows runs no earlier than it).
  t.end_ms = now();
  if (opts_.comm_time == CommTime::MODEL && model_end_ms > t.end_ms) {
    t.end_ms = model_end_ms;
    sleep_until_ms(t0_ + model_end_ms);
  }
}

void Device::collective(int32_t k) {
  const Instr& in = prog_.instrs[static_cast<size_t>(k)];
  const InstrPlan& ip = plan_.instrs[static_cast<size_t>(k)];
  InstrTiming& t = timing_[static_cast<size_t>(k)];
  Stream& s = *streams_[static_cast<size_t>(ip.stream)];
  const auto stage = static_cast<size_t>(in.stage.v);
  const bool gather = in.op == OpKind::UNSHARD;
  const auto shard = static_cast<int64_t>(plan_.shard_members.size());
  // A bucket reduces its share of the stage's gradient elements (a multiple of the shard size).
  int64_t n = gather ? plan_.param_elems.at(stage) : plan_.grad_elems.at(stage);
  if (!gather && !in.bucket.whole()) {
    const auto b = bucket_layers(in.bucket, plan_.stage_layers.at(stage));
    n = std::max<int64_t>(shard, n * b.size() / plan_.stage_layers.at(stage) / shard * shard);
  }
  std::vector<double> data(static_cast<size_t>(gather ? n / shard : n));
  if (gather) fill_param(data, prog_.rank.v, in.stage, step_);
  else fill_grad(data, prog_.rank.v, in.stage, step_);
  t.start_ms = t.ready_ms;
  // The straggler model's arrival delay, exactly as the simulator applies it.
  double arrival = t.start_ms + cost_.arrival_delay_ms(prog_, in);
  if (arrival > t.start_ms) sleep_until_ms(t0_ + arrival);
  for (const CollPhase& ph : ip.phases) {
    std::vector<double> out(ph.op == CollOp::REDUCE_SCATTER ? data.size() / static_cast<size_t>(shard)
                            : ph.op == CollOp::ALL_GATHER   ? data.size() * static_cast<size_t>(shard)
                                                            : data.size());
    Job job;
    job.coll = CollRequest{ph.op, ph.comm, ph.seq, &data, &out, arrival, 0.0};
    s.job = &job;
    progress_.submit(&job);
    job.wait();
    s.job = nullptr;
    data.swap(out);
    arrival = job.coll->last_arrival_ms;  // the next phase starts when this one's last member arrived
  }
  finish_comm(t, arrival + cost_.base_collective_ms(in));
  if (gather) {
    checked(k, &CheckCounts::unshards, check_gathered(data, plan_.shard_members, in.stage, step_));
  } else {
    const bool scattered = std::any_of(ip.phases.begin(), ip.phases.end(),
                                       [](const CollPhase& p) { return p.op == CollOp::REDUCE_SCATTER; });
    checked(k, &CheckCounts::reductions,
            check_reduced(data, scattered ? plan_.shard_index : 0, plan_.dp_members, in.stage, step_));
  }
}

void Device::fire(int32_t record, double at_ms) {
  std::lock_guard lock(event_mu_);
  fired_[static_cast<size_t>(record)] = at_ms;
  event_cv_.notify_all();
}

double Device::wait_record(int32_t record) {
  std::unique_lock lock(event_mu_);
  // A WAIT whose event is never recorded (a program the verifier rejects) blocks like the engine's.
  event_cv_.wait(lock, [&] { return record >= 0 && happened(fired_[static_cast<size_t>(record)]); });
  return fired_[static_cast<size_t>(record)];
}

void Device::checked(int32_t k, int64_t CheckCounts::*kind, const std::optional<std::string>& bad) {
  {
    std::lock_guard lock(err_mu_);
    ++(checks_.*kind);
  }
  if (bad) error(k, *bad);
}

void Device::error(int32_t k, const std::string& what) {
  std::lock_guard lock(err_mu_);
  ++checks_.failed;
  errors_.push_back(fmt::format("{} #{}: {}", to_line(prog_, prog_.instrs[static_cast<size_t>(k)]), k, what));
}

bool Device::all_done() const {
  for (size_t s = 0; s < streams_.size(); ++s)
    if (static_cast<size_t>(streams_[s]->done.load()) < plan_.stream_instrs[s].size()) return false;
  return true;
}

}  // namespace ppstream::replay
