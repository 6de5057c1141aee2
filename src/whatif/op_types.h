// The Megatron-LM timer op types the what-if dependency model knows (the artifact's
// metatypes.OpType), and the groups the figures use.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ppstream::whatif {

enum class OpType : uint8_t {
  FWD, BWD, FWD_SEND, FWD_RECV, BWD_SEND, BWD_RECV,
  PARAMS_AG, GRADS_RS, SEP_GRADS_AR, LAYERNORM_AR, EMBEDDING_AR, CLIP, OPTIMIZER, GC,
  COUNT_
};
inline constexpr int kOpTypes = static_cast<int>(OpType::COUNT_);

// The producer's timer name ("forward-compute", …).
std::string_view name_of(OpType t);
std::optional<OpType> parse_op_type(std::string_view timer_name);
// The label by_op_type uses: P2P ops by direction ("forward-pp-comm", "backward-pp-comm"), every
// other type by its own name (the artifact's optype2v2).
std::string_view label_of(OpType t);
inline bool is_p2p(OpType t) { return t >= OpType::FWD_SEND && t <= OpType::BWD_RECV; }
inline bool is_compute(OpType t) { return t == OpType::FWD || t == OpType::BWD; }
// Communication in the ideal's sense (median, not mean): P2P, DP collectives, the layernorm and
// embedding all-reduces and the gradient-norm all-reduce of clip.
inline bool is_comm_type(OpType t) { return is_p2p(t) || (t >= OpType::PARAMS_AG && t <= OpType::CLIP); }

}  // namespace ppstream::whatif
