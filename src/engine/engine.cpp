// The discrete-event loop: hosts issue in program order, streams run FIFO, and completions
// are processed in (time, rank, stream, index) order (docs/semantics.md "Execution").
//
// Only completions are queued. Everything else (a head becoming ready, a WAIT seeing its
// event, a BATCH op meeting its mirror, a collective's last arrival) is resolved when it
// happens, and the completion time it implies (a max over start/post/arrival times plus a
// duration) is pushed. Times only ever come from max() and +duration, so the result does not
// depend on processing order; the queue key only makes the order itself reproducible.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "engine/cost_check.h"
#include "engine/engine_state.h"
#include "engine/tape_writer.h"
#include "ppstream/program/format.h"

namespace ppstream {
namespace engine {

EngineState::EngineState(const ProgramSet& s, const Topology& t, const Platform& p, const CostModel* c,
                         EngineResult& r)
    : set(s), topo(t), platform(p), cost(c), res(r), queues(build_comm_queues(t, p.comm_queues())) {
  const size_t n = s.programs.size();
  host_next.assign(n, 0);
  host_blocked_on.assign(n, kNone);
  head.assign(t.stream_list_base.begin(), t.stream_list_base.end() - 1);
  prog_of_slot.resize(head.size());
  for (int32_t p2 = 0; p2 < t.programs(); ++p2)
    for (int32_t sl = t.stream_base[p2]; sl < t.stream_base[p2 + 1]; ++sl) prog_of_slot[sl] = p2;
  parked_wait.assign(head.size(), kNone);
  posted.assign(t.op_instr.size(), kNotYet);
  matched.assign(t.op_instr.size(), kNotYet);
  batch_left.assign(t.op_instr.size(), 0);
  batch_last.assign(t.op_instr.size(), 0.0);
  inst_arrived.assign(t.instances.size(), 0);
  inst_time.assign(t.instances.size(), 0.0);
  inst_done.assign(t.instances.size(), 0);
  coll_phase.assign(t.coll.size(), 0);
  comm_held_since.assign(t.coll.size(), std::nullopt);
  comm_free.assign(t.coll.size(), PerGroup<std::optional<double>>{});
  unit_end.assign(queues.units.size(), std::nullopt);
  unit_held_since.assign(queues.units.size(), std::nullopt);
  unit_left.assign(queues.units.size(), 0);
  unit_last.assign(queues.units.size(), 0.0);
  res.timing.resize(n);
  for (size_t p2 = 0; p2 < n; ++p2) res.timing[p2].assign(s.programs[p2].instrs.size(), InstrTiming{});
}

bool EngineState::arrived_at(int32_t g, int32_t inst) const {
  const int32_t p = topo.prog_of_global(g);
  if (!timing(p, g - topo.instr_base[p]).started()) return false;
  const int32_t cs = topo.collective_slot(g);
  const CollectiveSlot& slot = topo.coll[cs];
  for (uint8_t j = 0; j < slot.n; ++j) {
    if (slot.inst[j] == inst) return !(coll_phase[cs] == j && comm_held_since[cs]);
    if (!inst_done[slot.inst[j]]) return false;
  }
  return false;
}

uint8_t EngineState::phase_comms(int32_t cs, uint8_t phase) const {
  const CollectiveSlot& slot = topo.coll[cs];
  // A named group (COLLECTIVE) is on no HSDP communicator: comms 0.
  return slot.n == 0 || slot.comms == 0 ? slot.comms : comm_bit(topo.instances[slot.inst[phase]].kind);
}

int32_t EngineState::comm_blocker(int32_t cs) const {
  const CollectiveSlot& slot = topo.coll[cs];
  if (queues.active()) {  // PER_GROUP: a collective's group is its own stream's; ONE_PER_RANK: the rank's queue
    if (queues.kind != CommQueues::ONE_PER_RANK || coll_phase[cs] != 0) return kNone;
    const int32_t u = unit_blocker(queues.unit_of_coll[cs]);
    return u == kNone ? kNone : queues.units[static_cast<size_t>(u)].g;
  }
  const uint8_t mask = phase_comms(cs, coll_phase[cs]);
  for (GroupKind kind : kGroupKinds) {
    const int32_t prev = slot.prev[kind];
    if ((mask & comm_bit(kind)) && prev != kNone && !comm_free[topo.collective_slot(prev)][kind]) return prev;
  }
  return kNone;
}

namespace {

// With kRecord (record_tape, a TapeWriter), every time below that is assigned also appends its
// tape entry, written at the point the semantics defines it (include/ppstream/engine/tape.h); a
// template parameter, so that a plain run compiles without the recording branches.
template <bool kRecord>
class Runner {
 public:
  Runner(EngineState& st, TapeWriter* tape) : st_(st), tw_(tape) { assert(kRecord == (tape != nullptr)); }

  void run() {
    for (int32_t p = 0; p < st_.topo.programs(); ++p) issue_from(p, 0.0);
    while (!st_.queue.empty()) {
      const Completion c = st_.queue.top();
      st_.queue.pop();
      ++st_.res.events_processed;
      complete(c);
    }
  }

 private:
  EngineState& st_;
  TapeWriter* tw_;  // null unless kRecord

  const Instr& instr(int32_t p, int32_t i) const { return st_.set.programs[p].instrs[i]; }

  double checked(double ms, int32_t p, int32_t i, const char* what) const {
    return checked_cost(ms, st_.set.programs[p], i, what);
  }
  double compute_ms(int32_t p, int32_t i) const {
    return st_.cost ? checked(st_.cost->compute_ms(st_.set.programs[p], instr(p, i)), p, i, "compute_ms") : 0.0;
  }
  double batch_ms(int32_t p, int32_t i) const {
    return st_.cost ? checked(st_.cost->batch_ms(st_.set.programs[p], instr(p, i)), p, i, "batch_ms") : 0.0;
  }
  double collective_ms(int32_t p, int32_t i) const {
    return st_.cost ? checked(st_.cost->collective_ms(st_.set.programs[p], instr(p, i)), p, i, "collective_ms")
                    : 0.0;
  }
  double arrival_ms(int32_t p, int32_t i) const {
    return st_.cost ? checked(st_.cost->arrival_delay_ms(st_.set.programs[p], instr(p, i)), p, i,
                              "arrival_delay_ms")
                    : 0.0;
  }
  double host_issue_ms(int32_t p, int32_t i) const {
    return st_.cost ? checked(st_.cost->host_issue_ms(st_.set.programs[p], instr(p, i)), p, i, "host_issue_ms") : 0.0;
  }
  double launch_delay_ms(int32_t p, int32_t i) const {
    return st_.cost ? checked(st_.cost->launch_delay_ms(st_.set.programs[p], instr(p, i)), p, i, "launch_delay_ms") : 0.0;
  }
  double external_ms(int32_t p, int32_t i) const {
    return st_.cost ? checked(st_.cost->external_arrival_ms(st_.set.programs[p], instr(p, i)), p, i,
                              "external_arrival_ms")
                    : 0.0;
  }

  void schedule(int32_t p, int32_t i, double t) {
    const int32_t slot = st_.stream_slot(p, i);
    assert(st_.head_instr(slot) == i);  // the key's `pos` (engine_state.h Completion)
    st_.queue.push({t, st_.head[slot], slot});
  }

  // The host issues instructions in program order, host_issue_ms each, until one blocks it.
  // Issue times may lie ahead of the event being processed: every later time takes the max with
  // them (make_ready's callers), so the result does not depend on processing order.
  void issue_from(int32_t p, double t) {
    const auto& instrs = st_.set.programs[p].instrs;
    // The first issue of this call counts from `t`: step start, or the end of the instruction
    // that blocked the host (the one before it).
    for (bool first = true; st_.host_next[p] < static_cast<int32_t>(instrs.size()); first = false) {
      const int32_t i = st_.host_next[p]++;
      t += host_issue_ms(p, i);
      st_.timing(p, i).issue_ms = t;
      if (kRecord) {
        const int32_t g = st_.topo.global(p, i);
        tw_->add(tw_->at(g, Field::ISSUE), {i == 0 ? kNone : tw_->at(g - 1, first ? Field::END : Field::ISSUE)},
                 TapeCost::HOST_ISSUE, p, i);
      }
      if (st_.head_instr(st_.stream_slot(p, i)) == i) make_ready(p, i, t);
      if (st_.platform.host_blocks(instrs[i])) {
        st_.host_blocked_on[p] = i;
        return;
      }
    }
  }

  // Instruction i reached its stream's head at t = max(its issue, its stream predecessor's end).
  void make_ready(int32_t p, int32_t i, double t) {
    st_.timing(p, i).ready_ms = t;
    if (kRecord) {
      const int32_t slot = st_.stream_slot(p, i), g = st_.topo.global(p, i);
      const int32_t pos = st_.head[slot];
      const int32_t pred = pos > st_.topo.stream_list_base[slot] ? tw_->at(st_.topo.global(p, st_.topo.stream_list[pos - 1]), Field::END) : kNone;
      tw_->add(tw_->at(g, Field::READY), {tw_->at(g, Field::ISSUE), pred});
    }
    try_start(p, i, t);
  }

  // Instruction i's start condition held at t (at its stream head, issued, a WAIT's event
  // fired): it starts launch_delay_ms later (docs/semantics.md "Launch delay").
  void try_start(int32_t p, int32_t i, double t) {
    InstrTiming& tm = st_.timing(p, i);
    const OpKind kind = st_.topo.op_of[st_.topo.global(p, i)];
    if (kind == OpKind::WAIT) {
      const int32_t rec = synced_record(p, i);
      if (st_.platform.events_enforced() && (rec == kNone || !st_.timing(p, rec).finished())) {
        st_.parked_wait[st_.stream_slot(p, i)] = i;  // woken by fire(), which calls again
        return;
      }
    }
    t += launch_delay_ms(p, i);
    const int32_t g = kRecord ? st_.topo.global(p, i) : kNone;
    if (kRecord) {  // start = max(ready, a WAIT's RECORD's end) + launch delay, parked or not
      const int32_t rec = kind == OpKind::WAIT && st_.platform.events_enforced()
                              ? tw_->at(st_.topo.global(p, synced_record(p, i)), Field::END)
                              : kNone;
      tw_->add(tw_->at(g, Field::START), {tw_->at(g, Field::READY), rec}, TapeCost::LAUNCH_DELAY, p, i);
    }
    switch (kind) {
      case OpKind::WAIT: {
        tm.start_ms = t;
        if (kRecord) tw_->add(tw_->at(g, Field::END), {tw_->at(g, Field::START)});
        schedule(p, i, t);
        return;
      }
      case OpKind::BATCH: start_batch(p, i, t); return;
      case OpKind::UNSHARD:
      case OpKind::REDUCE_GRAD:
      case OpKind::COLLECTIVE: start_collective(p, i, t); return;
      case OpKind::RECORD:
        tm.start_ms = t;
        if (kRecord) tw_->add(tw_->at(g, Field::END), {tw_->at(g, Field::START)});
        schedule(p, i, t);
        return;
      case OpKind::F:
      case OpKind::B:
      case OpKind::I:
      case OpKind::W:
      case OpKind::RESHARD:
      case OpKind::OPT_STEP:
        tm.start_ms = t;
        if (kRecord) tw_->add(tw_->at(g, Field::END), {tw_->at(g, Field::START)}, TapeCost::COMPUTE, p, i);
        schedule(p, i, t + compute_ms(p, i));
        return;
    }
  }

  void start_batch(int32_t p, int32_t i, double t) {
    st_.timing(p, i).start_ms = t;
    const int32_t g = st_.topo.global(p, i);
    const int32_t n = st_.topo.batch_ops(g);
    if (n == 0) {
      if (kRecord) tw_->add(tw_->at(g, Field::END), {tw_->at(g, Field::START)}, TapeCost::BATCH, p, i);
      schedule(p, i, t + batch_ms(p, i));
      return;
    }
    const int32_t first = st_.topo.first_op(g);
    st_.batch_left[first] = n;
    st_.batch_last[first] = t;
    if (st_.queues.active()) {
      start_units(g, t);
    } else if (st_.platform.batch_matching() == BatchMatching::ALL_AT_ONCE) {
      for (int32_t k = 0; k < n; ++k) post(first + k, t, kRecord ? tw_->at(g, Field::START) : kNone);
    } else {
      post(first, t, kRecord ? tw_->at(g, Field::START) : kNone);
    }
    drain_posts();
  }

  // Queued BATCH g reached its stream head at t: each of its units posts its ops once the unit
  // before it on its queue has finished (else it is held until finish_unit).
  void start_units(int32_t g, double t) {
    const auto& units = st_.queues.units;
    for (auto u = static_cast<size_t>(st_.queues.unit_of_instr[g]); u < units.size() && units[u].g == g; ++u) {
      st_.unit_left[u] = units[u].ops;
      st_.unit_last[u] = t;
      if (st_.unit_blocker(static_cast<int32_t>(u)) != kNone)
        st_.unit_held_since[u] = t;
      else
        post_unit(static_cast<int32_t>(u), t);
    }
  }

  // Posts the ops of BATCH unit u at max(t, the end of the unit before it on its queue).
  void post_unit(int32_t u, double t) {
    const QueueUnit& qu = st_.queues.units[static_cast<size_t>(u)];
    if (qu.prev != kNone) t = std::max(t, st_.unit_end[static_cast<size_t>(qu.prev)].value());
    st_.unit_held_since[static_cast<size_t>(u)].reset();
    const int32_t first = st_.topo.first_op(qu.g);
    const auto n = st_.topo.batch_ops(qu.g);
    for (int32_t k = 0; k < n; ++k) {
      if (st_.queues.unit_of_op[first + k] != u) continue;
      if (kRecord)  // posted = max(the BATCH's start, the end of the unit before it)
        tw_->add(tw_->posted(first + k), {tw_->at(qu.g, Field::START), qu.prev == kNone ? kNone : tw_->unit_end(qu.prev)});
      st_.post_work.emplace_back(first + k, t);
    }
  }

  // Op `op` is posted at t, which is the value of tape slot `from`.
  void post(int32_t op, double t, int32_t from) {
    if (kRecord) tw_->add(tw_->posted(op), {from});
    st_.post_work.emplace_back(op, t);
  }

  // Unit u finished at t: the next unit on its queue, if held there, begins.
  void finish_unit(int32_t u, double t) {
    st_.unit_end[static_cast<size_t>(u)] = t;
    const int32_t next = st_.queues.units[static_cast<size_t>(u)].next;
    if (next == kNone) return;
    const std::optional<double> held = st_.unit_held_since[static_cast<size_t>(next)];
    if (held && st_.queues.units[static_cast<size_t>(next)].ops > 0) {
      post_unit(next, *held);
      drain_posts();
    } else if (st_.queues.units[static_cast<size_t>(next)].ops == 0) {
      const int32_t g = st_.queues.units[static_cast<size_t>(next)].g;
      if (const auto since = st_.comm_held_since[st_.topo.collective_slot(g)]) begin_phase(g, *since);
    }
  }

  // Collective g completes at t; on the rank's one queue its unit then finishes.
  void finish_collective(int32_t g, double t) {
    if (st_.queues.kind != CommQueues::ONE_PER_RANK) return;
    const int32_t u = st_.queues.unit_of_coll[st_.topo.collective_slot(g)];
    if (kRecord) tw_->set_unit_end(u, tw_->at(g, Field::END));
    finish_unit(u, t);
  }

  // Under eager sends (Platform::eager_sends) a send is matched at its own post; its receive
  // at max(its post, the send's post). Otherwise both sides match at the later post.
  bool eager_send(int32_t op) const { return st_.platform.eager_sends() && is_send(st_.topo.op(op).kind); }

  void drain_posts() {
    while (!st_.post_work.empty()) {
      const auto [op, t] = st_.post_work.back();
      st_.post_work.pop_back();
      st_.posted[op] = t;
      const bool local = eager_send(op);
      if (local) {
        if (kRecord) tw_->add(tw_->matched(op), {tw_->posted(op)});
        on_matched(op, t);
      }
      const int32_t m = st_.topo.mirror[op];
      if (m == kNone || !happened(st_.posted[m])) continue;
      const double at = std::max(t, st_.posted[m]);
      if (!local) {
        if (kRecord) tw_->add(tw_->matched(op), {tw_->posted(op), tw_->posted(m)});
        on_matched(op, at);
      }
      if (!eager_send(m)) {
        if (kRecord) tw_->add(tw_->matched(m), {tw_->posted(op), tw_->posted(m)});
        on_matched(m, at);
      }
    }
  }

  void on_matched(int32_t op, double t) {
    st_.matched[op] = t;
    const int32_t g = st_.topo.op_instr[op];
    const int32_t first = st_.topo.first_op(g);
    st_.batch_last[first] = std::max(st_.batch_last[first], t);
    if (st_.queues.active()) {  // a unit ends like a batch of its own: its last match + batch_ms
      const auto u = static_cast<size_t>(st_.queues.unit_of_op[op]);
      st_.unit_last[u] = std::max(st_.unit_last[u], t);
      if (--st_.unit_left[u] == 0) {
        const int32_t p = st_.topo.prog_of_global(g);
        const int32_t i = g - st_.topo.instr_base[p];
        if (kRecord) {  // max(the BATCH's start, its unit's matches) + batch_ms
          auto& ops = tw_->scratch();
          ops.push_back(tw_->at(g, Field::START));
          for (int32_t k = first; k < first + st_.topo.batch_ops(g); ++k)
            if (st_.queues.unit_of_op[k] == static_cast<int32_t>(u)) ops.push_back(tw_->matched(k));
          tw_->add(tw_->own_unit_end(static_cast<int32_t>(u)), ops, TapeCost::BATCH, p, i);
        }
        finish_unit(static_cast<int32_t>(u), st_.unit_last[u] + batch_ms(p, i));
      }
    }
    if (--st_.batch_left[first] == 0) {
      const int32_t p = st_.topo.prog_of_global(g);
      const int32_t i = g - st_.topo.instr_base[p];
      if (kRecord) {  // max(its start, every op's match) + batch_ms
        auto& ops = tw_->scratch();
        ops.push_back(tw_->at(g, Field::START));
        for (int32_t k = first; k < first + st_.topo.batch_ops(g); ++k) ops.push_back(tw_->matched(k));
        tw_->add(tw_->at(g, Field::END), ops, TapeCost::BATCH, p, i);
      }
      schedule(p, i, st_.batch_last[first] + batch_ms(p, i));
    } else if (st_.platform.batch_matching() == BatchMatching::SERIAL_IN_ORDER) {
      post(op + 1, t, kRecord ? tw_->matched(op) : kNone);
    }
  }

  void start_collective(int32_t p, int32_t i, double t) {
    st_.timing(p, i).start_ms = t;
    begin_phase(st_.topo.global(p, i), t);
  }

  // Collective g is ready at t to begin its current phase. Communicator order: the phase
  // begins once every earlier collective of the rank on the same communicator has finished its
  // phase there (else it is held back until release()). Phase 0 arrives arrival_delay_ms after
  // it begins; a local collective (only this member in the set: the others arrive per the
  // straggler model) completes after its delay and collective_ms.
  void begin_phase(int32_t g, double t) {
    const int32_t cs = st_.topo.collective_slot(g);
    if (st_.comm_blocker(cs) != kNone) {
      st_.comm_held_since[cs] = t;
      return;
    }
    st_.comm_held_since[cs].reset();
    const CollectiveSlot& slot = st_.topo.coll[cs];
    const uint8_t phase = st_.coll_phase[cs];
    const uint8_t mask = st_.phase_comms(cs, phase);
    double at = t;
    // Not held back: every earlier phase on these communicators (or the unit before) has finished.
    if (!st_.queues.active()) {
      for (GroupKind kind : kGroupKinds)
        if ((mask & engine::comm_bit(kind)) && slot.prev[kind] != kNone)
          at = std::max(at, st_.comm_free[st_.topo.collective_slot(slot.prev[kind])][kind].value());
    } else if (st_.queues.kind == CommQueues::ONE_PER_RANK && phase == 0) {
      const int32_t prev = st_.queues.units[static_cast<size_t>(st_.queues.unit_of_coll[cs])].prev;
      if (prev != kNone) at = std::max(at, st_.unit_end[static_cast<size_t>(prev)].value());
    }
    const int32_t p = st_.topo.prog_of_global(g);
    const int32_t i = g - st_.topo.instr_base[p];
    if (kRecord) record_phase_begin(g, cs, phase, mask);
    if (slot.n == 0) {
      double delay = arrival_ms(p, i);
      if (!st_.set.world.expanded) delay = std::max(delay, external_ms(p, i));
      const double end = at + delay + collective_ms(p, i);
      if (kRecord) tw_->add(tw_->at(g, Field::END), {tw_->arrival(cs, 0)}, TapeCost::COLLECTIVE, p, i);
      schedule(p, i, end);
      release(g, mask, end, kRecord ? tw_->at(g, Field::END) : kNone);
      finish_collective(g, end);
      return;
    }
    arrive(slot.inst[phase], phase == 0 ? at + arrival_ms(p, i) : at);
  }

  // The tape entry of begin_phase's arrival: max(the phase's begin — the collective's start, or
  // its first phase's end —, the communicators' or the queue unit's previous end) + phase 0's
  // arrival delay (a local collective's: also the outside members' slowest, one-replica sets).
  void record_phase_begin(int32_t g, int32_t cs, uint8_t phase, uint8_t mask) {
    const CollectiveSlot& slot = st_.topo.coll[cs];
    auto& ops = tw_->scratch();
    ops.push_back(phase == 0 ? tw_->at(g, Field::START) : tw_->done(slot.inst[0]));
    if (!st_.queues.active()) {
      for (GroupKind kind : kGroupKinds)
        if ((mask & engine::comm_bit(kind)) && slot.prev[kind] != kNone)
          ops.push_back(tw_->comm_free(st_.topo.collective_slot(slot.prev[kind]), kind));
    } else if (st_.queues.kind == CommQueues::ONE_PER_RANK && phase == 0) {
      const int32_t prev = st_.queues.units[static_cast<size_t>(st_.queues.unit_of_coll[cs])].prev;
      if (prev != kNone) ops.push_back(tw_->unit_end(prev));
    }
    const int32_t p = st_.topo.prog_of_global(g);
    const TapeCost cost = phase != 0 ? TapeCost::NONE
                          : slot.n == 0 && !st_.set.world.expanded ? TapeCost::ARRIVAL_OR_EXTERNAL
                                                                  : TapeCost::ARRIVAL;
    tw_->add(tw_->arrival(cs, phase), ops, cost, p, g - st_.topo.instr_base[p]);
  }

  // Collective g's phase on the communicators in `mask` finishes at t: the rank's next
  // collective on each of them, if held back, is ready again.
  // `from` is the tape slot holding t.
  void release(int32_t g, uint8_t mask, double t, int32_t from) {
    if (st_.queues.active()) return;  // no communicator chains: see finish_unit
    const int32_t cs = st_.topo.collective_slot(g);
    for (GroupKind kind : kGroupKinds) {
      if (!(mask & engine::comm_bit(kind))) continue;
      st_.comm_free[cs][kind] = t;
      if (kRecord) tw_->set_comm_free(cs, kind, from);
      const int32_t next = st_.topo.coll[cs].next[kind];
      if (next == kNone) continue;
      const int32_t ncs = st_.topo.collective_slot(next);
      if (const auto since = st_.comm_held_since[ncs]; since && st_.comm_blocker(ncs) == kNone) begin_phase(next, *since);
    }
  }

  // A member reached instance `inst` at time t. When the last member arrives, each member
  // moves on to its next phase (ready there at the completion time) or completes after its own
  // collective_ms: members end together only when the cost model gives them equal times.
  void arrive(int32_t inst, double t) {
    st_.inst_time[inst] = std::max(st_.inst_time[inst], t);
    const CollectiveInstance& ci = st_.topo.instances[inst];
    if (++st_.inst_arrived[inst] < ci.size) return;
    st_.inst_done[inst] = 1;
    const double done = st_.inst_time[inst];
    const uint8_t mask = ci.named == kNone ? engine::comm_bit(ci.kind) : uint8_t{0};
    if (kRecord) {  // the last arrival over the members
      auto& ops = tw_->scratch();
      for (int32_t j = 0; j < ci.size; ++j) {
        const int32_t cs = st_.topo.collective_slot(st_.topo.instance_members[ci.members_begin + j]);
        ops.push_back(tw_->arrival(cs, st_.topo.coll[cs].inst[0] == inst ? 0 : 1));
      }
      tw_->add(tw_->done(inst), ops);
    }
    for (int32_t j = 0; j < ci.size; ++j) {
      const int32_t g = st_.topo.instance_members[ci.members_begin + j];
      const int32_t cs = st_.topo.collective_slot(g);
      const CollectiveSlot& slot = st_.topo.coll[cs];
      if (slot.n == 2 && slot.inst[0] == inst) {
        st_.coll_phase[cs] = 1;
        release(g, mask, done, kRecord ? tw_->done(inst) : kNone);
        begin_phase(g, done);
      } else {
        const int32_t p = st_.topo.prog_of_global(g);
        const int32_t i = g - st_.topo.instr_base[p];
        const double end = done + collective_ms(p, i);
        if (kRecord) tw_->add(tw_->at(g, Field::END), {tw_->done(inst)}, TapeCost::COLLECTIVE, p, i);
        schedule(p, i, end);
        release(g, mask, end, kRecord ? tw_->at(g, Field::END) : kNone);
        finish_collective(g, end);
      }
    }
  }

  void complete(const Completion& c) {
    const int32_t slot = c.slot, p = st_.prog_of_slot[slot], i = st_.topo.stream_list[c.pos];
    st_.timing(p, i).end_ms = c.t;
    st_.res.makespan_ms = std::max(st_.res.makespan_ms, c.t);
    if (st_.topo.op_of[st_.topo.global(p, i)] == OpKind::RECORD) fire(p, i, c.t);
    ++st_.head[slot];
    const int32_t next = st_.head_instr(slot);
    if (next != kNone && st_.timing(p, next).issued()) make_ready(p, next, std::max(c.t, st_.timing(p, next).issue_ms));
    if (st_.host_blocked_on[p] == i) {
      st_.host_blocked_on[p] = kNone;
      issue_from(p, c.t);
    }
  }

  // The RECORD a WAIT synchronizes with (Topology::synced_record, docs/semantics.md "Events").
  int32_t synced_record(int32_t p, int32_t i) const { return st_.topo.synced_record(p, i); }

  // RECORD `record` completed: the WAIT heads that synchronize with it start. A WAIT head that
  // has not started is issued and at its head and waits for its RECORD: try_start parked it.
  void fire(int32_t p, int32_t record, double t) {
    for (int32_t slot = st_.topo.stream_base[p]; slot < st_.topo.stream_base[p + 1]; ++slot) {
      const int32_t h = st_.parked_wait[slot];
      if (h == kNone || synced_record(p, h) != record) continue;
      st_.parked_wait[slot] = kNone;
      try_start(p, h, std::max(t, st_.timing(p, h).ready_ms));
    }
  }
};

}  // namespace
}  // namespace engine

EngineResult engine::run_on_topology(const ProgramSet& set, const Topology& topo, const EngineOptions& opts,
                                     std::shared_ptr<const Tape>* tape) {
  const Platform& platform = platform_for(opts.platform);
  EngineResult res;
  EngineState st(set, topo, platform, platform.timed() ? opts.cost : nullptr, res);
  std::optional<TapeWriter> writer;
  if (tape) writer.emplace(topo, st.queues, opts.platform, platform.timed());
  if (writer)
    Runner<true>(st, &*writer).run();
  else
    Runner<false>(st, nullptr).run();
  res.completed = true;
  for (const auto& prog : res.timing)
    for (const auto& t : prog)
      if (!t.finished()) res.completed = false;
  if (!res.completed) diagnose_deadlock(st);
  if (tape) *tape = res.completed ? writer->finish(set) : nullptr;
  return res;
}

EngineResult run_engine(const ProgramSet& set, const EngineOptions& opts) {
  return engine::run_checked(engine::build_topology(set), opts);
}

EngineResult engine::run_checked(const Topology& topo, const EngineOptions& opts) {
  check_structure(topo);
  return engine::run_on_topology(*topo.set, topo, opts);
}

void engine::check_structure(const Topology& topo) {
  const ProgramSet& set = *topo.set;
  if (!topo.errors.empty()) {
    const auto& e = topo.errors.front();
    const std::string where =
        e.prog < static_cast<int32_t>(set.programs.size())
            ? fmt::format("r{}{}", set.programs[e.prog].rank.v, e.instr >= 0 ? fmt::format(" #{}", e.instr) : "")
            : "set";
    throw std::invalid_argument(fmt::format("engine: {}: {}{}", where, e.message,
                                            topo.errors.size() > 1
                                                ? fmt::format(" (and {} more problems)", topo.errors.size() - 1)
                                                : ""));
  }
}

}  // namespace ppstream
