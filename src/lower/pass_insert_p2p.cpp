// Pass insert-p2p: one BATCH after each compute unit with the unit's sends and the next unit's
// receives (Megatron-LM's send_X_recv_Y pattern; the seed's batch after `B mb15 s7` holds
// `SEND_B mb15 s7` and the receive for the next backward). Ops inside a batch are ordered by a
// transfer key both ends agree on (producer's finish slot in the unit-time model, then producer
// stage, microbatch, direction), so executing every rank's ops one at a time in that order
// (cpu-serial) follows one global order of transfers.
#include <algorithm>
#include <map>
#include <tuple>

#include "passes.h"
#include "ppstream/schedule/schedule.h"

namespace ppstream::lower {
namespace {

using TransferKey = std::tuple<int64_t, int32_t, int32_t, bool>;  // finish, producer stage, mb, backward

struct Unit {
  std::vector<size_t> computes;  // instruction indices of the unit's F/B
};

}  // namespace

ProgramSet insert_p2p(const ProgramSet& in, const PipelineConfig& cfg) {
  const int32_t pp = cfg.pipeline_parallel_size;
  const int32_t S = cfg.num_stages();
  // Rebuild the compute order from the programs and run the unit-time model on it.
  ComputeOrder order(in.programs.size());
  for (size_t r = 0; r < in.programs.size(); ++r)
    for (const Instr& i : in.programs[r].instrs)
      if (i.op == OpKind::F || i.op == OpKind::B) order[r].push_back({i.op == OpKind::B, i.mb, i.stage});
  const UnitTimeline times = simulate_unit_time(order);
  std::map<std::tuple<bool, int32_t, int32_t>, int64_t> finish;  // (bwd, mb, stage) → slot
  for (size_t r = 0; r < order.size(); ++r)
    for (size_t k = 0; k < order[r].size(); ++k)
      finish[{order[r][k].backward, order[r][k].mb.v, order[r][k].stage.v}] = times.slot[r][k] + 1;

  auto rank_of = [&](int32_t stage) { return stage % pp; };
  auto key_of = [&](const P2POp& op) -> TransferKey {
    const bool bwd = !is_forward(op.kind);
    int32_t producer = op.stage.v;
    if (op.kind == P2PKind::RECV_F) producer = op.stage.v - 1;
    if (op.kind == P2PKind::RECV_B) producer = op.stage.v + 1;
    return {finish.at({bwd, op.mb.v, producer}), producer, op.mb.v, bwd};
  };
  auto sends_of = [&](const Instr& c, int32_t r, std::vector<P2POp>& out) {
    const int32_t s = c.stage.v;
    if (c.op == OpKind::F && s + 1 < S && rank_of(s + 1) != r)
      out.push_back({P2PKind::SEND_F, c.mb, c.stage, Rank{rank_of(s + 1)}});
    if (c.op == OpKind::B && s > 0 && rank_of(s - 1) != r)
      out.push_back({P2PKind::SEND_B, c.mb, c.stage, Rank{rank_of(s - 1)}});
  };
  auto recvs_of = [&](const Instr& c, int32_t r, std::vector<P2POp>& out) {
    const int32_t s = c.stage.v;
    if (c.op == OpKind::F && s > 0 && rank_of(s - 1) != r)
      out.push_back({P2PKind::RECV_F, c.mb, c.stage, Rank{rank_of(s - 1)}});
    if (c.op == OpKind::B && s + 1 < S && rank_of(s + 1) != r)
      out.push_back({P2PKind::RECV_B, c.mb, c.stage, Rank{rank_of(s + 1)}});
  };

  ProgramSet out = in;
  for (Program& p : out.programs) {
    const int32_t r = p.pp_rank;
    // Group computes into units: a B directly followed by an F forms one unit under overlap_b_f.
    std::vector<Unit> units;
    for (size_t k = 0; k < p.instrs.size(); ++k) {
      const Instr& i = p.instrs[k];
      if (i.op != OpKind::F && i.op != OpKind::B) continue;
      const bool pair_with_prev = cfg.pipeline_parallel_overlap_b_f && i.op == OpKind::F && !units.empty() &&
                                  units.back().computes.size() == 1 &&
                                  p.instrs[units.back().computes.front()].op == OpKind::B;
      if (pair_with_prev)
        units.back().computes.push_back(k);
      else
        units.push_back({{k}});
    }
    // Batch before unit u = sends of unit u-1 + receives of unit u.
    std::vector<std::vector<P2POp>> batch_before(units.size() + 1);
    for (size_t u = 0; u < units.size(); ++u) {
      for (size_t k : units[u].computes) {
        sends_of(p.instrs[k], r, batch_before[u + 1]);
        recvs_of(p.instrs[k], r, batch_before[u]);
      }
    }
    for (auto& b : batch_before)
      std::stable_sort(b.begin(), b.end(), [&](const P2POp& a, const P2POp& c) { return key_of(a) < key_of(c); });

    std::vector<Instr> result;
    size_t u = 0;
    auto emit_batch = [&](size_t idx) {
      if (batch_before[idx].empty()) return;
      Instr b;
      b.op = OpKind::BATCH;
      b.stream = "compute";
      b.p2p = batch_before[idx];
      result.push_back(std::move(b));
    };
    for (size_t k = 0; k < p.instrs.size(); ++k) {
      const Instr& i = p.instrs[k];
      if (u < units.size() && k == units[u].computes.front()) emit_batch(u);
      result.push_back(i);
      if (u < units.size() && k == units[u].computes.back() && ++u == units.size()) emit_batch(units.size());
    }
    p.instrs = std::move(result);
  }
  return out;
}

}  // namespace ppstream::lower
