// The compute dependency model (deps.h): roles, needs, sends and a stage's last backward.
#include "ppstream/program/deps.h"

#include <algorithm>
#include <map>

namespace ppstream {

const char* to_string(Role r) {
  switch (r) {
    case Role::FORWARD: return "FORWARD";
    case Role::INPUT_GRAD: return "INPUT_GRAD";
    case Role::WEIGHT_GRAD: return "WEIGHT_GRAD";
  }
  return "?";
}

bool is_compute(OpKind k) { return roles_of(k) != 0; }

RoleMask roles_of(OpKind k) {
  switch (k) {
    case OpKind::F: return role_bit(Role::FORWARD);
    case OpKind::B: return role_bit(Role::INPUT_GRAD) | role_bit(Role::WEIGHT_GRAD);
    case OpKind::I: return role_bit(Role::INPUT_GRAD);
    case OpKind::W: return role_bit(Role::WEIGHT_GRAD);
    default: return 0;
  }
}

Needs needs_of(OpKind op, Microbatch mb, Stage s, int32_t num_stages) {
  Needs out;
  switch (op) {
    case OpKind::F:
      if (s.v > 0) out.push_back({"activation", Role::FORWARD, mb, Stage{s.v - 1}, P2PKind::RECV_F});
      break;
    case OpKind::B:
    case OpKind::I:
      if (s.v + 1 < num_stages) out.push_back({"input grad", Role::INPUT_GRAD, mb, Stage{s.v + 1}, P2PKind::RECV_B});
      out.push_back({"stash", Role::FORWARD, mb, s, std::nullopt});
      break;
    case OpKind::W: out.push_back({"dX stash", Role::INPUT_GRAD, mb, s, std::nullopt}); break;
    default: break;
  }
  return out;
}

std::optional<P2PKind> send_of(OpKind op, Stage s, int32_t num_stages) {
  if (op == OpKind::F) return s.v + 1 < num_stages ? std::optional(P2PKind::SEND_F) : std::nullopt;
  if (has_role(op, Role::INPUT_GRAD)) return s.v > 0 ? std::optional(P2PKind::SEND_B) : std::nullopt;
  return std::nullopt;
}

Transfer carried_by(const P2POp& op) {
  const Stage producer = is_send(op.kind) ? op.stage : mirror_of(op, op.peer).stage;
  return {is_forward(op.kind) ? Role::FORWARD : Role::INPUT_GRAD, op.mb, producer};
}

std::vector<StageBackward> stage_backwards(const Program& p) {
  std::map<int32_t, StageBackward> by_stage;
  for (size_t k = 0; k < p.instrs.size(); ++k) {
    const Instr& in = p.instrs[k];
    if (!has_role(in.op, Role::INPUT_GRAD) && !has_role(in.op, Role::WEIGHT_GRAD)) continue;
    auto [it, fresh] = by_stage.try_emplace(in.stage.v, StageBackward{in.stage, 0, 0, std::nullopt});
    if (has_role(in.op, Role::WEIGHT_GRAD)) it->second.last_weight_grad = static_cast<int32_t>(k);
    if (has_role(in.op, Role::INPUT_GRAD)) it->second.last_input_grad = static_cast<int32_t>(k);
  }
  std::vector<StageBackward> out;
  for (auto& [s, sb] : by_stage) out.push_back(sb);
  // Each stage's send: the first BATCH with a SEND_B of its last input-grad op (one scan).
  size_t missing = out.size();
  for (size_t j = 0; j < p.instrs.size() && missing > 0; ++j) {
    const Instr& b = p.instrs[j];
    if (b.op != OpKind::BATCH) continue;
    for (StageBackward& sb : out) {
      if (sb.send) continue;
      const Instr& last = p.instrs[static_cast<size_t>(sb.last_input_grad)];
      if (std::any_of(b.p2p.begin(), b.p2p.end(), [&](const P2POp& op) {
            return op.kind == P2PKind::SEND_B && op.mb == last.mb && op.stage == last.stage;
          })) {
        sb.send = static_cast<int32_t>(j);
        --missing;
      }
    }
  }
  return out;
}

}  // namespace ppstream
