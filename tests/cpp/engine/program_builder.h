// Test seam: builds small ProgramSets instruction by instruction, so engine and verifier tests
// read like the canonical text (`r0 compute F mb0 s0`) without depending on the parser.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ppstream/program/ir.h"

namespace ppstream::testing {

inline P2POp send_f(int mb, int s, int peer) { return {P2PKind::SEND_F, Microbatch{mb}, Stage{s}, Rank{peer}}; }
inline P2POp recv_f(int mb, int s, int peer) { return {P2PKind::RECV_F, Microbatch{mb}, Stage{s}, Rank{peer}}; }
inline P2POp send_b(int mb, int s, int peer) { return {P2PKind::SEND_B, Microbatch{mb}, Stage{s}, Rank{peer}}; }
inline P2POp recv_b(int mb, int s, int peer) { return {P2PKind::RECV_B, Microbatch{mb}, Stage{s}, Rank{peer}}; }

class SetBuilder {
 public:
  explicit SetBuilder(World w, DPMode mode = DPMode::NONE, ReducePolicy policy = ReducePolicy::NONE) {
    set_.world = w;
    set_.mode = mode;
    set_.policy = policy;
  }
  // Selects rank r (created on first use; ranks must be added in increasing order).
  SetBuilder& r(int rank) {
    if (set_.programs.empty() || set_.programs.back().rank.v != rank) {
      Program p;
      p.rank = Rank{rank};
      p.pp_rank = set_.world.expanded ? rank / set_.world.dp() : rank;
      set_.programs.push_back(p);
    }
    return *this;
  }
  SetBuilder& F(int mb, int s, std::string stream = "compute") { return compute(OpKind::F, mb, s, std::move(stream)); }
  SetBuilder& B(int mb, int s, std::string stream = "compute") { return compute(OpKind::B, mb, s, std::move(stream)); }
  SetBuilder& batch(std::vector<P2POp> ops, std::string stream = "p2p") {
    Instr i;
    i.op = OpKind::BATCH;
    i.stream = set_.programs.back().intern_stream(stream);
    i.p2p = std::move(ops);
    return add(std::move(i));
  }
  SetBuilder& record(std::string event, std::string stream = "compute") {
    return evt(OpKind::RECORD, std::move(event), std::move(stream));
  }
  SetBuilder& wait(std::string event, std::string stream = "compute") {
    return evt(OpKind::WAIT, std::move(event), std::move(stream));
  }
  SetBuilder& unshard(int s, std::string stream = "fsdp") { return staged(OpKind::UNSHARD, s, std::move(stream)); }
  SetBuilder& reshard(int s, std::string stream = "compute") { return staged(OpKind::RESHARD, s, std::move(stream)); }
  SetBuilder& reduce(int s, std::string stream = "reduce") { return staged(OpKind::REDUCE_GRAD, s, std::move(stream)); }
  SetBuilder& opt(std::string stream = "compute") {
    Instr i;
    i.op = OpKind::OPT_STEP;
    i.stream = set_.programs.back().intern_stream(stream);
    return add(std::move(i));
  }
  ProgramSet build() const { return set_; }

 private:
  ProgramSet set_;
  SetBuilder& add(Instr i) {
    set_.programs.back().instrs.push_back(std::move(i));
    return *this;
  }
  SetBuilder& compute(OpKind k, int mb, int s, std::string stream) {
    Instr i;
    i.op = k;
    i.stream = set_.programs.back().intern_stream(stream);
    i.mb = Microbatch{mb};
    i.stage = Stage{s};
    return add(std::move(i));
  }
  SetBuilder& evt(OpKind k, std::string event, std::string stream) {
    Instr i;
    i.op = k;
    i.stream = set_.programs.back().intern_stream(stream);
    i.event = set_.programs.back().intern_event(event);
    return add(std::move(i));
  }
  SetBuilder& staged(OpKind k, int s, std::string stream) {
    Instr i;
    i.op = k;
    i.stream = set_.programs.back().intern_stream(stream);
    i.stage = Stage{s};
    return add(std::move(i));
  }
};

}  // namespace ppstream::testing
