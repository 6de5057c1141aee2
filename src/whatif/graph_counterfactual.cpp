// The reduction-policy counterfactual on the lifted Megatron programs (docs/whatif.md
// "Counterfactual"): strip each grads-reduce-scatter COLLECTIVE and its events, then the
// compiler's place-reductions (place_program_reductions) places one REDUCE_GRAD per chunk.
#include "graph_counterfactual.h"

#include <fmt/format.h>

#include <map>
#include <stdexcept>

#include "ppstream/lower/reductions.h"

namespace ppstream::whatif {
namespace {

bool is_reduction(const Job& job, int32_t k) {
  return k >= 0 && job.ops[static_cast<size_t>(k)].type == OpType::GRADS_RS;
}

// One program with its reductions stripped: instructions, their template ops, and the index of
// the first instruction that waited on a reduction (-1: none).
struct Stripped {
  std::vector<Instr> instrs;
  std::vector<int32_t> op_of;
  int64_t drain_at = -1;
};

Stripped strip(const Job& job, const Program& p, const std::vector<int32_t>& op_of) {
  const size_t n = p.instrs.size();
  std::vector<char> drop(n, 0);
  std::map<std::string, int32_t> reduction_event;  // "done.<k>" → k, for the reductions' RECORDs
  for (size_t i = 0; i < n; ++i) {
    if (!is_reduction(job, op_of[i])) continue;
    drop[i] = 1;
    for (size_t j = i; j > 0 && p.instrs[j - 1].op == OpKind::WAIT && op_of[j - 1] < 0; --j) drop[j - 1] = 1;
    if (i + 1 < n && p.instrs[i + 1].op == OpKind::RECORD && op_of[i + 1] < 0) {
      drop[i + 1] = 1;
      reduction_event[p.event_name(p.instrs[i + 1].event)] = op_of[i];
    }
  }
  // The other ops that waited on a reduction: their WAITs go, the first of them takes the drain.
  Stripped out;
  std::optional<StreamId> drain_stream;
  int32_t first_consumer = -1;
  for (size_t i = 0; i < n; ++i) {
    if (drop[i] || p.instrs[i].op != OpKind::WAIT || !reduction_event.count(p.event_name(p.instrs[i].event))) continue;
    drop[i] = 1;
    size_t c = i + 1;
    while (c < n && op_of[c] < 0) ++c;
    if (c == n) throw std::logic_error("whatif: a WAIT with no instruction after it in the lifted programs");
    if (drain_stream && *drain_stream != p.instrs[c].stream)
      throw LiftError(fmt::format("{} and {} both wait for a gradient reduction but lie on different streams ({}, {}): "
                                  "one drain cannot stand for both",
                                  job.where(first_consumer, p.rank.v % job.dp), job.where(op_of[c], p.rank.v % job.dp),
                                  p.stream_name(*drain_stream), p.stream_name(p.instrs[c].stream)));
    if (!drain_stream) first_consumer = op_of[c];
    drain_stream = p.instrs[c].stream;
  }
  for (size_t i = 0; i < n; ++i) {
    if (drop[i]) continue;
    if (op_of[i] == first_consumer && first_consumer >= 0 && out.drain_at < 0)
      out.drain_at = static_cast<int64_t>(out.instrs.size());
    out.instrs.push_back(p.instrs[i]);
    out.op_of.push_back(op_of[i]);
  }
  return out;
}

}  // namespace

std::optional<ReducePolicy> traced_policy(const Job& job) {
  for (const TemplateOp& op : job.ops)
    if (op.type == OpType::SEP_GRADS_AR) return ReducePolicy::ASYNC;
  return std::nullopt;
}

const char* traced_policy_name(const Job& job) { return traced_policy(job) ? "async" : "after-backward"; }

GraphPrograms counterfactual_programs(const Job& job, const GraphPrograms& traced, ReducePolicy policy,
                                      std::vector<std::string>& notes) {
  if (policy == ReducePolicy::NONE) throw std::invalid_argument("whatif: counterfactual_programs needs inline or async");
  if (job.dp <= 1) {
    notes.push_back("DP 1: no gradient reduction to re-place; the counterfactual programs are the traced ones");
    return traced;
  }
  // Each chunk's one reduce-scatter, by stage (chunk · pp + p).
  std::map<int32_t, int32_t> rs_of_stage;
  for (size_t k = 0; k < job.ops.size(); ++k) {
    const TemplateOp& op = job.ops[k];
    if (op.type != OpType::GRADS_RS) continue;
    const int32_t s = std::max(op.chunk, 0) * job.pp + op.stage;
    if (!rs_of_stage.emplace(s, static_cast<int32_t>(k)).second)
      throw LiftError(fmt::format("{}: a second grads-reduce-scatter of model chunk {} (first: {}); the counterfactual "
                                  "re-places one reduction per chunk (gradient buckets are not lifted)",
                                  job.where(static_cast<int32_t>(k), 0), std::max(op.chunk, 0),
                                  job.where(rs_of_stage[s], 0)));
  }
  for (int32_t p = 0; p < job.pp; ++p)
    for (int32_t c = 0; c < job.vpp; ++c)
      if (!rs_of_stage.count(c * job.pp + p))
        throw LiftError(fmt::format("DP rank 0, stage {}, step {}: model chunk {} has no grads-reduce-scatter; "
                                    "the counterfactual needs each chunk's gradient reduction",
                                    p, job.steps.front(), c));
  GraphPrograms out;
  out.grouped = traced.grouped;
  out.dp = traced.dp;
  out.set.world = traced.set.world;
  out.set.world.shard = 1;
  out.set.world.replicate = job.dp;
  out.set.mode = DPMode::HSDP;
  out.set.policy = policy;
  int64_t stripped_count = 0;
  for (size_t q = 0; q < traced.set.programs.size(); ++q) {
    const Program& tp = traced.set.programs[q];
    Stripped s = strip(job, tp, traced.op_of[q]);
    stripped_count += static_cast<int64_t>(tp.instrs.size() - s.instrs.size());
    Program prog = tp;
    prog.instrs = s.instrs;
    ReductionPlacement rp;
    rp.policy = policy;
    if (s.drain_at >= 0) {
      // The pass looks for the drain's place before it inserts anything: stripped indices.
      const auto at = static_cast<size_t>(s.drain_at);
      rp.drain_before = [at](const Program&, size_t k) { return k == at; };
    }
    place_program_reductions(prog, rp);
    // Pure insertion: walk the result beside the stripped program to map instructions to ops.
    std::vector<int32_t> op_of;
    op_of.reserve(prog.instrs.size());
    size_t j = 0;
    for (const Instr& in : prog.instrs) {
      if (j < s.instrs.size() && in == s.instrs[j]) {
        op_of.push_back(s.op_of[j++]);
      } else if (in.op == OpKind::REDUCE_GRAD) {
        op_of.push_back(rs_of_stage.at(in.stage.v));
      } else {
        op_of.push_back(-1);
      }
    }
    if (j != s.instrs.size()) throw std::logic_error("whatif: place-reductions did more than insert into a lifted program");
    out.set.programs.push_back(std::move(prog));
    out.op_of.push_back(std::move(op_of));
  }
  notes.push_back(fmt::format("--reduce-grad {}: place-reductions on the lifted programs ({} instructions of the "
                              "traced reductions stripped, {} REDUCE_GRADs placed per step; the trace's own policy: {})",
                              to_string(policy), stripped_count, rs_of_stage.size() * static_cast<size_t>(job.dp),
                              traced_policy_name(job)));
  return out;
}

}  // namespace ppstream::whatif
