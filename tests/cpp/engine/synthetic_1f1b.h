// Test/benchmark seam: a synthetic 1F1B program set (no VPP) shaped like the lowering's
// output — Megatron-style combined batches (send_forward_recv_backward, …) on one `p2p`
// stream, RECORD/WAIT pairs between compute and p2p, and optional HSDP collectives with the
// inline or async reduction placement. Not the real lowering: a stand-in of the same shape.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "ppstream/program/ir.h"

namespace ppstream::testing {

struct Synthetic1F1B {
  int32_t pp = 4;
  int32_t microbatches = 8;
  World world;  // pp is overwritten; shard/replicate/expanded taken from here
  DPMode mode = DPMode::NONE;
  ReducePolicy policy = ReducePolicy::NONE;
};

namespace detail {

inline std::string ev(const char* name, int32_t mb, int32_t s) {
  return std::string(name) + "[mb" + std::to_string(mb) + ",s" + std::to_string(s) + "]";
}
inline std::string ev(const char* name, int32_t s) { return std::string(name) + "[s" + std::to_string(s) + "]"; }

class RankWriter {
 public:
  RankWriter(Program& p, int32_t dp, int32_t dp_index, bool expanded)
      : p_(p), dp_(dp), dp_index_(dp_index), expanded_(expanded) {}

  Rank peer(int32_t pp_rank) const { return Rank{expanded_ ? pp_rank * dp_ + dp_index_ : pp_rank}; }
  void plain(OpKind k, const std::string& stream, int32_t mb, int32_t s) {
    Instr i;
    i.op = k;
    i.stream = p_.intern_stream(stream);
    i.mb = Microbatch{mb};
    i.stage = Stage{s};
    p_.instrs.push_back(std::move(i));
  }
  void staged(OpKind k, const std::string& stream, int32_t s) {
    Instr i;
    i.op = k;
    i.stream = p_.intern_stream(stream);
    i.stage = Stage{s};
    p_.instrs.push_back(std::move(i));
  }
  void event(OpKind k, const std::string& stream, std::string name) {
    Instr i;
    i.op = k;
    i.stream = p_.intern_stream(stream);
    i.event = p_.intern_event(name);
    p_.instrs.push_back(std::move(i));
  }
  void opt() {
    Instr i;
    i.op = OpKind::OPT_STEP;
    i.stream = streams::kCompute;
    p_.instrs.push_back(std::move(i));
  }
  // One batch with WAITs for the sent buffers before it and RECORDs for received ones after.
  void batch(std::vector<P2POp> ops) {
    if (ops.empty()) return;
    for (const P2POp& o : ops)
      if (is_send(o.kind))
        event(OpKind::WAIT, "p2p", ev(o.kind == P2PKind::SEND_F ? "fwd_out" : "bwd_out", o.mb.v, o.stage.v));
    Instr i;
    i.op = OpKind::BATCH;
    i.stream = streams::kP2P;
    i.p2p = ops;
    p_.instrs.push_back(std::move(i));
    for (const P2POp& o : ops)
      if (!is_send(o.kind))
        event(OpKind::RECORD, "p2p", ev(o.kind == P2PKind::RECV_F ? "recv_F" : "recv_B", o.mb.v, o.stage.v));
  }

 private:
  Program& p_;
  int32_t dp_, dp_index_;
  bool expanded_;
};

}  // namespace detail

// Rank r of the pipeline holds stage r. Deadlock-free under strict and cpu-serial.
inline ProgramSet make_synthetic_1f1b(const Synthetic1F1B& cfg) {
  ProgramSet set;
  set.world = cfg.world;
  set.world.pp = cfg.pp;
  set.world.vpp = 1;
  set.mode = cfg.mode;
  set.policy = cfg.policy;
  const int32_t P = cfg.pp, m = cfg.microbatches, dp = set.world.dp();
  const int32_t copies = set.world.expanded ? dp : 1;
  const bool sharded = set.sharded();
  const bool managed = set.mode != DPMode::NONE;
  for (int32_t pr = 0; pr < P; ++pr)
    for (int32_t d = 0; d < copies; ++d) {
      Program prog;
      prog.rank = Rank{set.world.expanded ? pr * dp + d : pr};
      prog.pp_rank = pr;
      detail::RankWriter w(prog, dp, d, set.world.expanded);
      const int32_t s = pr;
      const bool first = pr == 0, last = pr == P - 1;
      auto recv_f = [&](int32_t mb) -> std::vector<P2POp> {
        if (first) return {};
        return {{P2PKind::RECV_F, Microbatch{mb}, Stage{s}, w.peer(pr - 1)}};
      };
      auto send_f = [&](int32_t mb) -> std::vector<P2POp> {
        if (last) return {};
        return {{P2PKind::SEND_F, Microbatch{mb}, Stage{s}, w.peer(pr + 1)}};
      };
      auto recv_b = [&](int32_t mb) -> std::vector<P2POp> {
        if (last) return {};
        return {{P2PKind::RECV_B, Microbatch{mb}, Stage{s}, w.peer(pr + 1)}};
      };
      auto send_b = [&](int32_t mb) -> std::vector<P2POp> {
        if (first) return {};
        return {{P2PKind::SEND_B, Microbatch{mb}, Stage{s}, w.peer(pr - 1)}};
      };
      auto join = [](std::vector<P2POp> a, const std::vector<P2POp>& b) {
        a.insert(a.end(), b.begin(), b.end());
        return a;
      };
      auto fwd = [&](int32_t mb) {
        if (!first) w.event(OpKind::WAIT, "compute", detail::ev("recv_F", mb, s));
        w.plain(OpKind::F, "compute", mb, s);
        if (!last) w.event(OpKind::RECORD, "compute", detail::ev("fwd_out", mb, s));
      };
      // Backward; for the stage's last microbatch, the reduction goes where the policy says
      // (inline: on compute before the output-grad record, so the send waits for it).
      auto bwd = [&](int32_t mb) {
        if (!last) w.event(OpKind::WAIT, "compute", detail::ev("recv_B", mb, s));
        w.plain(OpKind::B, "compute", mb, s);
        const bool final_b = mb == m - 1;
        if (final_b && managed && cfg.policy == ReducePolicy::INLINE) {
          w.staged(OpKind::REDUCE_GRAD, "compute", s);
          if (sharded) w.staged(OpKind::RESHARD, "compute", s);
        }
        if (!first) w.event(OpKind::RECORD, "compute", detail::ev("bwd_out", mb, s));
        if (final_b && managed && cfg.policy == ReducePolicy::ASYNC)
          w.event(OpKind::RECORD, "compute", detail::ev("compute_ready", s));
      };
      auto async_reduce = [&] {
        if (!managed || cfg.policy != ReducePolicy::ASYNC) return;
        w.event(OpKind::WAIT, "reduce", detail::ev("compute_ready", s));
        w.staged(OpKind::REDUCE_GRAD, "reduce", s);
        if (sharded) w.staged(OpKind::RESHARD, "reduce", s);
        w.event(OpKind::RECORD, "reduce", detail::ev("reduce_done", s));
      };

      if (sharded) {
        w.staged(OpKind::UNSHARD, "fsdp", s);
        w.event(OpKind::RECORD, "fsdp", detail::ev("unsharded", s));
        w.event(OpKind::WAIT, "compute", detail::ev("unsharded", s));
      }
      const int32_t warm = std::min(P - pr - 1, m), rest = m - warm;
      for (int32_t i = 0; i < warm; ++i) {
        w.batch(recv_f(i));
        fwd(i);
        w.batch(send_f(i));
      }
      if (rest > 0) w.batch(recv_f(warm));
      for (int32_t i = 0; i < rest; ++i) {
        fwd(warm + i);
        w.batch(join(send_f(warm + i), recv_b(i)));
        bwd(i);
        if (i == rest - 1) {
          w.batch(send_b(i));
        } else {
          w.batch(join(recv_f(warm + i + 1), send_b(i)));  // forward-direction op first: cpu-serial safe
        }
        if (i == m - 1) async_reduce();
      }
      for (int32_t i = rest; i < m; ++i) {
        w.batch(recv_b(i));
        bwd(i);
        w.batch(send_b(i));
        if (i == m - 1) async_reduce();
      }
      if (managed) {
        if (cfg.policy == ReducePolicy::ASYNC) w.event(OpKind::WAIT, "compute", detail::ev("reduce_done", s));
        w.opt();
      }
      set.programs.push_back(std::move(prog));
    }
  return set;
}

}  // namespace ppstream::testing
