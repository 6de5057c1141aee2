// The tape (include/ppstream/engine/tape.h): the writer the engine records with, and the replay
// that evaluates a tape in one linear pass.
#include "ppstream/engine/tape.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <stdexcept>

#include "engine/cost_check.h"
#include "engine/engine_state.h"
#include "engine/tape_writer.h"

namespace ppstream {
namespace engine {

TapeWriter::TapeWriter(const Topology& topo, const CommQueueTable& queues, PlatformKind platform, bool timed)
    : tape_(std::make_shared<Tape>()) {
  const auto instrs = static_cast<int64_t>(topo.instr_base.back());
  const auto ops = static_cast<int64_t>(topo.op_instr.size());
  const auto units = static_cast<int64_t>(queues.units.size());
  const auto colls = static_cast<int64_t>(topo.coll.size());
  const auto insts = static_cast<int64_t>(topo.instances.size());
  const int64_t total = 4 * instrs + 2 * ops + units + 2 * colls + insts;
  if (total > std::numeric_limits<int32_t>::max() / 2)
    throw std::invalid_argument("engine: the set is too large for a tape (over 2^30 slots)");
  posted_base_ = static_cast<int32_t>(4 * instrs);
  matched_base_ = posted_base_ + static_cast<int32_t>(ops);
  unit_base_ = matched_base_ + static_cast<int32_t>(ops);
  arrival_base_ = unit_base_ + static_cast<int32_t>(units);
  done_base_ = arrival_base_ + static_cast<int32_t>(2 * colls);
  tape_->slots_ = done_base_ + static_cast<int32_t>(insts);
  tape_->platform_ = platform;
  tape_->timed_ = timed;
  tape_->instr_base_ = topo.instr_base;
  unit_src_.resize(static_cast<size_t>(units));
  for (int32_t u = 0; u < static_cast<int32_t>(units); ++u) unit_src_[static_cast<size_t>(u)] = unit_base_ + u;
  free_src_.assign(static_cast<size_t>(2 * colls), kNone);
  tape_->entries_.reserve(static_cast<size_t>(4 * instrs + 2 * ops));
  tape_->operands_.reserve(static_cast<size_t>(6 * instrs + 4 * ops));
}

void TapeWriter::add(int32_t dst, std::span<const int32_t> ops, TapeCost cost, int32_t p, int32_t i) {
  constexpr size_t kMaxOps = std::numeric_limits<uint16_t>::max();
  auto& out = tape_->operands_;
  size_t n = 0;
  for (const int32_t s : ops) {
    if (s == kNone) continue;
    assert(s >= 0 && s < tape_->slots_);
    if (n == kMaxOps) {  // max is exact and associative: fold the first kMaxOps into a temporary
      const int32_t tmp = tape_->slots_++;
      tape_->entries_.push_back({tmp, 0, 0, static_cast<uint16_t>(n), TapeCost::NONE});
      out.push_back(tmp);
      n = 1;
    }
    out.push_back(s);
    ++n;
  }
  tape_->entries_.push_back({dst, p, i, static_cast<uint16_t>(n), cost});
}

std::shared_ptr<const Tape> TapeWriter::finish(const ProgramSet& set) {
  tape_->set_ = &set;
  tape_->entries_.shrink_to_fit();
  tape_->operands_.shrink_to_fit();
  return std::move(tape_);
}

namespace {

// The cost term of entry `e` under `cost` (the engine's calls, checked alike).
double cost_term(const Tape& tape, const CostModel& cost, const TapeEntry& e) {
  const Program& p = tape.set().programs[static_cast<size_t>(e.prog)];
  const Instr& in = p.instrs[static_cast<size_t>(e.index)];
  switch (e.cost) {
    case TapeCost::NONE: return 0.0;
    case TapeCost::HOST_ISSUE: return checked_cost(cost.host_issue_ms(p, in), p, e.index, "host_issue_ms");
    case TapeCost::LAUNCH_DELAY: return checked_cost(cost.launch_delay_ms(p, in), p, e.index, "launch_delay_ms");
    case TapeCost::COMPUTE: return checked_cost(cost.compute_ms(p, in), p, e.index, "compute_ms");
    case TapeCost::BATCH: return checked_cost(cost.batch_ms(p, in), p, e.index, "batch_ms");
    case TapeCost::COLLECTIVE: return checked_cost(cost.collective_ms(p, in), p, e.index, "collective_ms");
    case TapeCost::ARRIVAL: return checked_cost(cost.arrival_delay_ms(p, in), p, e.index, "arrival_delay_ms");
    case TapeCost::ARRIVAL_OR_EXTERNAL: {
      const double a = checked_cost(cost.arrival_delay_ms(p, in), p, e.index, "arrival_delay_ms");
      return std::max(a, checked_cost(cost.external_arrival_ms(p, in), p, e.index, "external_arrival_ms"));
    }
  }
  return 0.0;
}

}  // namespace
}  // namespace engine

size_t Tape::bytes() const {
  return entries_.capacity() * sizeof(TapeEntry) + operands_.capacity() * sizeof(int32_t) +
         instr_base_.capacity() * sizeof(int32_t);
}

std::shared_ptr<const Tape> record_tape(const engine::Topology& topo, const EngineOptions& opts, EngineResult& result) {
  engine::check_structure(topo);
  std::shared_ptr<const Tape> tape;
  result = engine::run_on_topology(*topo.set, topo, opts, &tape);
  return tape;
}

namespace {

bool is_arrival(TapeCost c) { return c == TapeCost::ARRIVAL || c == TapeCost::ARRIVAL_OR_EXTERNAL; }

// Appends the terms of the entries `want` selects, in entry order.
template <class Want>
void ask(const Tape& tape, const CostModel* cost, std::vector<double>& out, Want want) {
  if (!tape.timed()) cost = nullptr;
  for (const TapeEntry& e : tape.entries())
    if (e.cost != TapeCost::NONE && want(e.cost)) out.push_back(cost ? engine::cost_term(tape, *cost, e) : 0.0);
}

}  // namespace

TapeCosts tape_costs(const Tape& tape, const CostModel* cost) {
  TapeCosts c;
  ask(tape, cost, c.fixed, [](TapeCost k) { return !is_arrival(k); });
  ask(tape, cost, c.arrival, is_arrival);
  return c;
}

void arrival_costs(const Tape& tape, const CostModel* cost, std::vector<double>& arrival) {
  arrival.clear();
  ask(tape, cost, arrival, is_arrival);
}

EngineResult replay_tape(const Tape& tape, const std::vector<double>& fixed_ms, const std::vector<double>& arrival_ms,
                         std::vector<double>& slots, bool timing) {
  // Every slot is written before it is read (tape order is topological): no initialization.
  if (slots.size() < static_cast<size_t>(tape.slots())) slots.resize(static_cast<size_t>(tape.slots()));
  double* v = slots.data();
  const int32_t* op = tape.operands().data();
  const double* fixed = fixed_ms.data();
  const double* arrival = arrival_ms.data();
  for (const TapeEntry& e : tape.entries()) {
    double t = 0.0;
    if (e.ops > 0) {
      t = v[*op++];
      for (uint16_t k = 1; k < e.ops; ++k) t = std::max(t, v[*op++]);
    }
    if (is_arrival(e.cost))
      t += *arrival++;
    else if (e.cost != TapeCost::NONE)
      t += *fixed++;
    v[e.dst] = t;
  }
  EngineResult res;
  const ProgramSet& set = tape.set();
  if (timing) res.timing.resize(set.programs.size());
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const size_t n = set.programs[p].instrs.size();
    const double* s = v + 4 * static_cast<size_t>(tape.instr_base_[p]);
    if (!timing) {
      for (size_t i = 0; i < n; ++i) res.makespan_ms = std::max(res.makespan_ms, s[4 * i + 3]);
      continue;
    }
    auto& row = res.timing[p];
    row.resize(n);
    for (InstrTiming& tm : row) {
      tm = {s[0], s[1], s[2], s[3]};
      res.makespan_ms = std::max(res.makespan_ms, tm.end_ms);
      s += 4;
    }
  }
  res.completed = true;
  res.events_processed = tape.instructions();
  return res;
}

EngineResult replay_tape(const Tape& tape, const CostModel* cost) {
  const TapeCosts costs = tape_costs(tape, cost);
  std::vector<double> slots;
  return replay_tape(tape, costs.fixed, costs.arrival, slots);
}

}  // namespace ppstream
