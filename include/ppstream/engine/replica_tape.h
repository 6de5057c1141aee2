// The replica-vector evaluation: the engine run of an expanded world (pp × dp ranks, every DP
// replica the same programs) from the tape of one replica, evaluated over a vector of replicas
// (docs/simulate.md "Replica vector", docs/semantics.md "The tape").
//
// The *template* set is replica 0 of the expanded world (one program per PP rank, rank
// pp_rank × dp, P2P peers likewise); its topology (engine::build_topology(set, true)) forms
// every HSDP instance the full world has, with replica 0's member only. The engine's recorded run
// of it is the template tape: each entry is, for every replica, the entry the expanded run makes
// for that replica's copy of the instruction (program order and the static matching fix which
// times enter, not the values). The vector replay evaluates it slot-major, replica-minor (R = dp
// values per slot): an entry elementwise; the `done` entry of an instance (its last arrival) a
// max over the members of each group — a SHARD group the `shard` contiguous dp indices of one
// replicate index (dp index = replicate_index × shard + shard_index, World::group_members), a
// REPLICATE group the `replicate` indices of stride `shard` — written back to every member.
// Max is exact and the additions are the expanded run's, so every timing of every replica is
// bit-equal to the expanded engine run (tests/cpp/engine/replica_tape_test.cpp).
//
// Cost terms: per replica d, the arrival terms (ARRIVAL) are asked of the cost model with
// replica 0's program renumbered to rank pp_rank × dp + d (a copy of its header and
// instructions: the straggler's global rank); every other term is replica 0's, one value for all
// replicas. So a cost model may depend on the rank only in arrival_delay_ms; link sharing's
// per-rank extras (a second run) are not expressible here.
//
//   ProgramSet one = compile(cfg, {});                           // one replica, verified
//   ProgramSet tmpl = replica_template(one, cfg.world(true));
//   SimCostModel model(tmpl, cfg, spec, straggler);             // the full world's ring sizes
//   ReplicaTape tape = record_replica_tape(tmpl, {PlatformKind::ASCEND_MINDSPORE, &model});
//   ReplicaRun run = replay_replicas(tape, &model);             // every replica's timings
//   run.makespan_ms(d); run.timing(prog, index, d);
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ppstream/engine/engine.h"
#include "ppstream/engine/tape.h"

namespace ppstream {

// Replica 0 of the expanded `world` from a one-replica set (ranks = PP ranks): what the lowering's
// expand-world pass makes for dp index 0 (rank pp_rank × dp, each P2P peer × dp), nothing else.
ProgramSet replica_template(ProgramSet one_replica, const World& world);

// Renumbers a template set (or one already renumbered) to replica d: rank pp_rank × dp + d,
// each P2P peer likewise. The expanded set's programs of replica d, without copying them.
void renumber_replica(ProgramSet& tmpl, int32_t d);

// The template tape of a template set, and what its vector replay needs besides.
struct ReplicaTape {
  std::shared_ptr<const Tape> tape;  // null: the template run deadlocked
  World world;                        // the expanded world
  // Per tape entry: 0, or the group kind + 1 of an instance's `done` entry (a group max).
  std::vector<uint8_t> reduce;
  size_t bytes() const;
};

// Records the engine on `tmpl`'s template topology (engine::build_topology(tmpl, true)); throws
// std::invalid_argument for a structural error (a program outside replica 0, a set that is not
// expanded) or a bad cost value, as the engine does. `tmpl` must outlive the result.
ReplicaTape record_replica_tape(const ProgramSet& tmpl, const EngineOptions& opts);

// Every replica's timings: value (slot, replica) at slot × replicas + replica.
class ReplicaRun {
 public:
  int32_t replicas() const { return replicas_; }
  // The step end of replica d's ranks (the max over their instruction ends), and over all.
  double makespan_ms(int32_t d) const { return makespan_[static_cast<size_t>(d)]; }
  double makespan_ms() const;
  // Instruction `index` of template program `prog` in replica d (the expanded set's program
  // prog × dp + d, rank pp_rank × dp + d). Empty unless replayed with timings.
  InstrTiming timing(int32_t prog, int32_t index, int32_t d) const;
  // Replica d's programs' timings as an EngineResult of the template set.
  EngineResult replica(int32_t d) const;

 private:
  friend ReplicaRun replay_replicas(const ReplicaTape& tape, const CostModel* cost, bool timing,
                                    std::vector<double>* scratch);
  int32_t replicas_ = 0;
  std::vector<double> makespan_;
  std::vector<double> values_;       // the tape's slots × replicas (empty without timings)
  std::vector<int32_t> instr_base_;  // per template program (+1): first instruction
};

// The vector evaluation of `tape` under `cost` (a model of the template set; nullptr: zero
// cost). With `timing` false only the makespans are kept; the slot vector is then `scratch`'s
// when given (a buffer the caller reuses across replays, e.g. one per trial worker: no page
// faults for a fresh one each time), else freed. Throws as replay_tape does for a bad cost value
// (naming the rank of the replica that has it).
ReplicaRun replay_replicas(const ReplicaTape& tape, const CostModel* cost, bool timing = true,
                           std::vector<double>* scratch = nullptr);

}  // namespace ppstream
