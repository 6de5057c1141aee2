// Deterministic buffer contents for replay's communication and their exact checks. Every value
// is a small integer held in a double, so sums over any group are exact: a wrong, missing or
// mismatched transfer or reduction shows as a differing element (docs/replay.md, "Checks").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ppstream/program/ir.h"

namespace ppstream::replay {

// Element j of what `sender` sends for `op` (as written on the sender) in step `step`.
double p2p_value(int32_t sender, const P2POp& op, int32_t step, int64_t j);
// Element j of rank `rank`'s gradient buffer of stage `s` (REDUCE_GRAD) in step `step`.
double grad_value(int32_t rank, Stage s, int32_t step, int64_t j);
// Element j of rank `rank`'s parameter shard of stage `s` (UNSHARD all-gather).
double param_value(int32_t rank, Stage s, int32_t step, int64_t j);

void fill_p2p(std::vector<double>& buf, int32_t sender, const P2POp& op, int32_t step);
void fill_grad(std::vector<double>& buf, int32_t rank, Stage s, int32_t step);
void fill_param(std::vector<double>& buf, int32_t rank, Stage s, int32_t step);

// The checks return the first wrong element as "element J is X, expected Y", or nullopt.
// A receive of `op` (on `self`) from its peer.
std::optional<std::string> check_p2p(const std::vector<double>& buf, Rank self, const P2POp& recv, int32_t step);
// REDUCE_GRAD's result: `out` is this member's chunk (index `chunk` of size out.size()) of the
// sum over `members` (every rank of the stage's DP group) of their gradient buffers.
std::optional<std::string> check_reduced(const std::vector<double>& out, int64_t chunk, const std::vector<int32_t>& members,
                                         Stage s, int32_t step);
// UNSHARD's result: chunk i of `out` is the shard of shard-group member `members[i]`.
std::optional<std::string> check_gathered(const std::vector<double>& out, const std::vector<int32_t>& members, Stage s,
                                          int32_t step);

}  // namespace ppstream::replay
