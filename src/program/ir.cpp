// Names of the IR enums: the single spelling used by text, JSON, traces and messages.
#include "ppstream/program/ir.h"

#include <array>
#include <cstdint>
#include <limits>
#include <string>

namespace ppstream {
namespace {
constexpr std::array<const char*, 12> kOpNames = {"F",       "B",           "BATCH",    "RECORD", "WAIT", "UNSHARD",
                                                  "RESHARD", "REDUCE_GRAD", "OPT_STEP", "I",      "W",    "COLLECTIVE"};
constexpr std::array<const char*, 3> kCollNames = {"ALL_REDUCE", "ALL_GATHER", "REDUCE_SCATTER"};
constexpr std::array<const char*, 4> kP2PNames = {"SEND_F", "RECV_F", "SEND_B", "RECV_B"};
}  // namespace

const char* to_string(OpKind k) { return kOpNames[static_cast<size_t>(k)]; }
const char* to_string(P2PKind k) { return kP2PNames[static_cast<size_t>(k)]; }
const char* to_string(CollectiveType k) { return kCollNames[static_cast<size_t>(k)]; }

std::optional<CollectiveType> parse_collective_type(const std::string& s) {
  for (size_t i = 0; i < kCollNames.size(); ++i)
    if (s == kCollNames[i]) return static_cast<CollectiveType>(i);
  return std::nullopt;
}

const char* to_string(ReducePolicy p) {
  switch (p) {
    case ReducePolicy::NONE: return "none";
    case ReducePolicy::INLINE: return "inline";
    case ReducePolicy::ASYNC: return "async";
  }
  return "?";
}

const char* to_string(DPMode m) {
  switch (m) {
    case DPMode::NONE: return "none";
    case DPMode::FSDP: return "fsdp";
    case DPMode::HSDP: return "hsdp";
  }
  return "?";
}

std::optional<OpKind> parse_op_kind(const std::string& s) {
  for (size_t i = 0; i < kOpNames.size(); ++i)
    if (s == kOpNames[i]) return static_cast<OpKind>(i);
  return std::nullopt;
}

std::optional<P2PKind> parse_p2p_kind(const std::string& s) {
  for (size_t i = 0; i < kP2PNames.size(); ++i)
    if (s == kP2PNames[i]) return static_cast<P2PKind>(i);
  return std::nullopt;
}

std::optional<ReducePolicy> parse_reduce_policy(const std::string& s) {
  for (auto p : {ReducePolicy::NONE, ReducePolicy::INLINE, ReducePolicy::ASYNC})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

std::optional<DPMode> parse_dp_mode(const std::string& s) {
  for (auto m : {DPMode::NONE, DPMode::FSDP, DPMode::HSDP})
    if (s == to_string(m)) return m;
  return std::nullopt;
}

bool is_send(P2PKind k) { return k == P2PKind::SEND_F || k == P2PKind::SEND_B; }
P2POp mirror_of(const P2POp& op, Rank self) {
  switch (op.kind) {
    case P2PKind::SEND_F: return {P2PKind::RECV_F, op.mb, Stage{op.stage.v + 1}, self};
    case P2PKind::RECV_F: return {P2PKind::SEND_F, op.mb, Stage{op.stage.v - 1}, self};
    case P2PKind::SEND_B: return {P2PKind::RECV_B, op.mb, Stage{op.stage.v - 1}, self};
    case P2PKind::RECV_B: return {P2PKind::SEND_B, op.mb, Stage{op.stage.v + 1}, self};
  }
  return op;
}

bool is_forward(P2PKind k) { return k == P2PKind::SEND_F || k == P2PKind::RECV_F; }

std::optional<std::string> world_size_error(const World& w) {
  constexpr int64_t kMaxStages = 65536;  // as config/validate.cpp: pp * vpp
  if (w.pp < 1 || w.vpp < 1 || w.shard < 1 || w.replicate < 1)
    return "world pp=" + std::to_string(w.pp) + " vpp=" + std::to_string(w.vpp) + " shard=" +
           std::to_string(w.shard) + " replicate=" + std::to_string(w.replicate) + ": every size must be >= 1";
  if (w.placement == Placement::V && w.vpp != 2)
    return "world pp=" + std::to_string(w.pp) + " vpp=" + std::to_string(w.vpp) +
           " placement=v: V placement holds exactly 2 virtual stages per rank (stages r and 2pp-1-r)";
  const int64_t stages = int64_t{w.pp} * w.vpp;
  if (stages > kMaxStages)
    return "world pp=" + std::to_string(w.pp) + " vpp=" + std::to_string(w.vpp) + ": " + std::to_string(stages) +
           " virtual stages; at most " + std::to_string(kMaxStages);
  constexpr int64_t kMaxRank = std::numeric_limits<int32_t>::max();
  const int64_t pp_shard = int64_t{w.pp} * w.shard;  // < 2^62; times replicate only when <= 2^31
  const int64_t ranks = pp_shard > kMaxRank ? pp_shard : pp_shard * w.replicate;
  if (ranks > kMaxRank)
    return "world pp=" + std::to_string(w.pp) + " shard=" + std::to_string(w.shard) + " replicate=" +
           std::to_string(w.replicate) + ": more than " + std::to_string(kMaxRank) + " ranks; rank ids must fit in int32";
  return std::nullopt;
}

std::vector<Stage> local_stages(int32_t pp_rank, const World& w) {
  std::vector<Stage> out;
  out.reserve(static_cast<size_t>(w.vpp));
  for (int32_t c = 0; c < w.vpp; ++c) out.push_back(stage_of_chunk(pp_rank, c, w.pp, w.placement));
  return out;
}

const char* to_string(Placement p) { return p == Placement::V ? "v" : "loop"; }

std::optional<Placement> parse_placement(const std::string& s) {
  if (s == "loop") return Placement::LOOP;
  if (s == "v") return Placement::V;
  return std::nullopt;
}

}  // namespace ppstream
