#include "op_types.h"

#include <array>

#include "ppstream/analyze/megatron.h"

namespace ppstream::whatif {
namespace {
// The reader's list (megatron.h), in OpType's order.
constexpr const auto& kNames = analyze::kMegatronTimerNames;
static_assert(kNames.size() == kOpTypes);
}  // namespace

std::string_view name_of(OpType t) { return kNames[static_cast<size_t>(t)]; }

std::optional<OpType> parse_op_type(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<OpType>(i);
  }
  return std::nullopt;
}

std::string_view label_of(OpType t) {
  if (t == OpType::FWD_SEND || t == OpType::FWD_RECV) return "forward-pp-comm";
  if (t == OpType::BWD_SEND || t == OpType::BWD_RECV) return "backward-pp-comm";
  return name_of(t);
}

}  // namespace ppstream::whatif
