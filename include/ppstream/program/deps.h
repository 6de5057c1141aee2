// The dependency model of compute ops — the one place that says what F, B, I and W produce,
// what each needs and from whom, and which P2P op carries it (DESIGN.md rule 4). The unit-time
// schedule model, P2P insertion, reduction placement, FSDP, the verifier's happens-before and
// send-before-reduce rules call it; docs/semantics.md "Buffers and happens-before" is its text.
//
// Roles: F fills FORWARD; the fused backward B fills INPUT_GRAD and WEIGHT_GRAD; the split
// backward's I (dX) fills INPUT_GRAD and W (dW) fills WEIGHT_GRAD (Qi et al., "Zero Bubble
// Pipeline Parallelism", ICLR 2024; PyTorch's I/W schedule actions).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "ppstream/program/ir.h"

namespace ppstream {

enum class Role : uint8_t {
  FORWARD = 1,      // the stage's output activation (and the stash its backward reads)
  INPUT_GRAD = 2,   // the gradient w.r.t. the stage's input: what SEND_B carries upstream
  WEIGHT_GRAD = 4,  // the stage's parameter gradients: what REDUCE_GRAD sums
};
using RoleMask = uint8_t;
inline constexpr RoleMask role_bit(Role r) { return static_cast<RoleMask>(r); }

const char* to_string(Role r);     // "FORWARD", "INPUT_GRAD", "WEIGHT_GRAD"
bool is_compute(OpKind k);         // F, B, I, W
RoleMask roles_of(OpKind k);       // 0 for non-compute kinds
inline bool has_role(OpKind k, Role r) { return (roles_of(k) & role_bit(r)) != 0; }

// One input a compute op needs: the op of `stage` that fills `role` for `mb`. When `stage`
// lives on another PP rank the data arrives by `recv` on the consumer (mirror: the producer's
// send, P2P mirror_of). `buffer` names it in messages and docs.
struct Need {
  const char* buffer = "";  // "activation", "input grad", "stash", "dX stash"
  Role role = Role::FORWARD;
  Microbatch mb;
  Stage stage;
  std::optional<P2PKind> recv;  // RECV_F / RECV_B when the producer stage may be remote
};
// What one compute op needs: at most two Needs, in a value (no allocation: asked once per op by
// the lowering, the verifier and the unit-time model).
class Needs {
 public:
  size_t size() const { return n_; }
  const Need& operator[](size_t k) const { return v_[k]; }
  const Need* begin() const { return v_.data(); }
  const Need* end() const { return v_.data() + n_; }
  void push_back(const Need& x) { v_[n_++] = x; }

 private:
  std::array<Need, 2> v_{};
  size_t n_ = 0;
};
// F(mb,s): activation ← FORWARD (mb, s-1) [RECV_F] when s > 0.
// B/I(mb,s): input grad ← INPUT_GRAD (mb, s+1) [RECV_B] unless last; stash ← FORWARD (mb, s).
// W(mb,s): dX stash ← INPUT_GRAD (mb, s) (W reuses what I saved; no recompute).
Needs needs_of(OpKind op, Microbatch mb, Stage s, int32_t num_stages);
// The send that carries a compute op's output to the neighbouring stage, if any: SEND_F for F
// (s < last), SEND_B for the INPUT_GRAD role (s > 0); W sends nothing.
std::optional<P2PKind> send_of(OpKind op, Stage s, int32_t num_stages);

// What a P2P op carries, named alike on both ends: the producer's role, microbatch and stage.
// SEND_F mb s: FORWARD (mb, s); RECV_F mb s: FORWARD (mb, s-1); SEND_B mb s: INPUT_GRAD (mb, s);
// RECV_B mb s: INPUT_GRAD (mb, s+1) — a receive names its producer through mirror_of.
struct Transfer {
  Role role;
  Microbatch mb;
  Stage producer;
  bool operator==(const Transfer&) const = default;
};
Transfer carried_by(const P2POp& op);

// A stage's last backward on a rank and the send it feeds (the reduction's anchors): index of
// the last op filling WEIGHT_GRAD (what the reduction waits for), of the last op filling
// INPUT_GRAD, and of the first BATCH holding that op's SEND_B (nullopt for stage 0 / not yet
// inserted). Indices into `p.instrs`, per local stage in stage order.
struct StageBackward {
  Stage stage;
  int32_t last_weight_grad = 0;
  int32_t last_input_grad = 0;
  std::optional<int32_t> send;
};
std::vector<StageBackward> stage_backwards(const Program& p);

}  // namespace ppstream
