// Rules `reduce-once` (mode != none: each local stage has exactly one REDUCE_GRAD per bucket —
// one in all for a whole stage, or `REDUCE_GRAD s bucket<j>/k` for every j < k, all of one k, so
// the buckets cover the stage's layers once; mode none: none at all), `bucket-cover` (a split
// backward — the pieces `B|W mb s bucket<j>/k` — has every piece j < k exactly once, in bucket
// order, with the same k as the stage's reductions), `reshard-once` (sharded: each local stage exactly one UNSHARD and one RESHARD;
// otherwise none) and the counting half of `drain` (exactly one OPT_STEP when mode != none,
// at most one otherwise).
#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "verify/report.h"

namespace ppstream::verify_detail {
namespace {

std::string stage_list(const std::vector<int32_t>& stages) {
  std::string out;
  for (size_t k = 0; k < stages.size(); ++k) out += fmt::format("{}s{}", k ? ", " : "", stages[k]);
  return out;
}

// Exactly one `kind` per local stage when `wanted`, none when not.
void count_per_stage(const engine::Topology& t, int32_t p, OpKind kind, bool wanted, const char* rule,
                     const std::string& why_none, Report& rep) {
  const Program& prog = t.program(p);
  const World& w = t.set->world;
  std::vector<int32_t> local;  // run only on valid ranks (Topology::skip): pp_rank < pp, pp * vpp <= 65536
  for (const Stage s : local_stages(prog.pp_rank, w)) local.push_back(s.v);
  std::map<int32_t, int32_t> first;  // stage → first index
  for (size_t k = 0; k < prog.instrs.size(); ++k) {
    const Instr& in = prog.instrs[k];
    if (in.op != kind) continue;
    const auto i = static_cast<int32_t>(k);
    if (!wanted) {
      rep.add(rule, p, i, fmt::format("{}: {}", rep.op(p, i), why_none));
      continue;
    }
    if (std::find(local.begin(), local.end(), in.stage.v) == local.end()) {
      rep.add(rule, p, i,
              fmt::format("{}: stage s{} is not local to r{} (PP rank {} holds {})", rep.op(p, i), in.stage.v,
                          prog.rank.v, prog.pp_rank, stage_list(local)));
      continue;
    }
    auto [it, fresh] = first.emplace(in.stage.v, i);
    if (!fresh)
      rep.add(rule, p, i,
              fmt::format("{} is the second {} of s{} in the step (first: {})", rep.op(p, i), to_string(kind),
                          in.stage.v, rep.local(p, it->second)));
  }
  if (!wanted) return;
  for (int32_t s : local)
    if (!first.count(s))
      rep.add(rule, p, kNone, fmt::format("stage s{} has no {} on r{} (mode {})", s, to_string(kind), prog.rank.v,
                                          to_string(t.set->mode)));
}

std::string bucket_text(Bucket b) { return b.whole() ? "" : fmt::format(" bucket{}/{}", b.index, b.count); }

// reduce-once for REDUCE_GRAD, per (stage, bucket), with the buckets of a stage covering it.
void count_reductions(const engine::Topology& t, int32_t p, Report& rep) {
  const Program& prog = t.program(p);
  std::vector<int32_t> local;
  for (const Stage s : local_stages(prog.pp_rank, t.set->world)) local.push_back(s.v);
  std::map<int32_t, std::map<int32_t, int32_t>> seen;  // stage → bucket index → first index
  std::map<int32_t, int32_t> count_of;                 // stage → bucket count (of its first reduction)
  for (size_t k = 0; k < prog.instrs.size(); ++k) {
    const Instr& in = prog.instrs[k];
    if (in.op != OpKind::REDUCE_GRAD) continue;
    const auto i = static_cast<int32_t>(k);
    if (std::find(local.begin(), local.end(), in.stage.v) == local.end()) {
      rep.add("reduce-once", p, i,
              fmt::format("{}: stage s{} is not local to r{} (PP rank {} holds {})", rep.op(p, i), in.stage.v,
                          prog.rank.v, prog.pp_rank, stage_list(local)));
      continue;
    }
    auto [c, fresh_stage] = count_of.emplace(in.stage.v, in.bucket.count);
    if (c->second != in.bucket.count) {
      rep.add("reduce-once", p, i,
              fmt::format("{} splits s{} into {} buckets, but its first reduction {} into {}; every reduction of a "
                          "stage uses one bucket count", rep.op(p, i), in.stage.v, in.bucket.count,
                          rep.local(p, seen[in.stage.v].begin()->second), c->second));
      continue;
    }
    auto [it, fresh] = seen[in.stage.v].emplace(in.bucket.index, i);
    if (!fresh)
      rep.add("reduce-once", p, i,
              fmt::format("{} is the second REDUCE_GRAD of s{}{} in the step (first: {})", rep.op(p, i), in.stage.v,
                          bucket_text(in.bucket), rep.local(p, it->second)));
  }
  for (int32_t s : local) {
    auto c = count_of.find(s);
    if (c == count_of.end()) {
      rep.add("reduce-once", p, kNone,
              fmt::format("stage s{} has no REDUCE_GRAD on r{} (mode {})", s, prog.rank.v, to_string(t.set->mode)));
      continue;
    }
    for (int32_t j = 0; j < c->second; ++j)
      if (!seen[s].count(j))
        rep.add("reduce-once", p, kNone,
                fmt::format("stage s{} has no REDUCE_GRAD s{} bucket{}/{} on r{}: its buckets must cover its layers "
                            "once", s, s, j, c->second, prog.rank.v));
  }
}

// bucket-cover: the pieces of each split backward (op, mb, stage) are buckets 0..k-1 once each,
// in that order (bucket 0 holds the last layers, which the backward reaches first), with the k
// of the stage's reductions.
void check_pieces(const engine::Topology& t, int32_t p, Report& rep) {
  const Program& prog = t.program(p);
  std::map<int32_t, int32_t> reduce_count;  // stage → bucket count of its first reduction
  for (const Instr& in : prog.instrs)
    if (in.op == OpKind::REDUCE_GRAD) reduce_count.emplace(in.stage.v, in.bucket.count);
  struct Split {
    int32_t first = kNone;        // its first piece
    std::vector<int32_t> pieces;  // indices, in program order
  };
  std::map<std::tuple<OpKind, int32_t, int32_t>, Split> splits;
  for (size_t k = 0; k < prog.instrs.size(); ++k) {
    const Instr& in = prog.instrs[k];
    if (in.bucket.whole()) continue;
    const auto i = static_cast<int32_t>(k);
    if (in.op != OpKind::B && in.op != OpKind::W && in.op != OpKind::REDUCE_GRAD) {
      rep.add("bucket-cover", p, i, fmt::format("{}: only B, W and REDUCE_GRAD take a bucket", rep.op(p, i)));
      continue;
    }
    if (in.op == OpKind::REDUCE_GRAD) continue;
    Split& sp = splits[std::tuple{in.op, in.mb.v, in.stage.v}];
    if (sp.first == kNone) sp.first = i;
    sp.pieces.push_back(i);
  }
  for (const auto& [key, sp] : splits) {
    const auto& [op, mb, s] = key;
    const int32_t k = prog.instrs[static_cast<size_t>(sp.first)].bucket.count;
    for (size_t n = 0; n < sp.pieces.size(); ++n) {
      const int32_t i = sp.pieces[n];
      const Bucket b = prog.instrs[static_cast<size_t>(i)].bucket;
      if (b.count != k || b.index != static_cast<int32_t>(n)) {
        rep.add("bucket-cover", p, i,
                fmt::format("{} is piece {} of {} mb{} s{}, which must be bucket{}/{} (the pieces run buckets 0..{} "
                            "once each, in order; first piece: {})",
                            rep.op(p, i), n + 1, to_string(op), mb, s, n, k, k - 1, rep.local(p, sp.first)));
        break;
      }
    }
    if (static_cast<int32_t>(sp.pieces.size()) < k)
      rep.add("bucket-cover", p, sp.pieces.back(),
              fmt::format("{} mb{} s{} has {} of its {} pieces: bucket{}/{} is missing, so its layers' gradients are "
                          "never computed", to_string(op), mb, s, sp.pieces.size(), k, sp.pieces.size(), k));
    auto rc = reduce_count.find(s);
    if (rc != reduce_count.end() && rc->second != 1 && rc->second != k)
      rep.add("bucket-cover", p, sp.first,
              fmt::format("{} splits s{} into {} buckets, but the stage's reductions use {}", rep.op(p, sp.first), s, k,
                          rc->second));
  }
}

}  // namespace

void check_once(const engine::Topology& t, Report& rep) {
  const ProgramSet& set = *t.set;
  const bool managed = set.mode != DPMode::NONE;
  const std::string not_sharded =
      managed ? fmt::format("the set is not sharded (mode {}, shard {})", to_string(set.mode), set.world.shard)
              : std::string("the set has mode none");
  for (int32_t p = 0; p < t.programs(); ++p) {
    if (t.skip(p)) continue;
    if (managed)
      count_reductions(t, p, rep);
    else
      count_per_stage(t, p, OpKind::REDUCE_GRAD, managed, "reduce-once", "the set has mode none", rep);
    check_pieces(t, p, rep);
    count_per_stage(t, p, OpKind::UNSHARD, set.sharded(), "reshard-once", not_sharded, rep);
    count_per_stage(t, p, OpKind::RESHARD, set.sharded(), "reshard-once", not_sharded, rep);
  }
}

void check_drain_count(const engine::Topology& t, Report& rep) {
  const bool managed = t.set->mode != DPMode::NONE;
  for (int32_t p = 0; p < t.programs(); ++p) {
    if (t.skip(p)) continue;
    const Program& prog = t.program(p);
    int32_t first = kNone;
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      if (prog.instrs[k].op != OpKind::OPT_STEP) continue;
      const auto i = static_cast<int32_t>(k);
      if (first == kNone)
        first = i;
      else
        rep.add("drain", p, i,
                fmt::format("{} is a second optimizer step on r{} (first: {})", rep.op(p, i), prog.rank.v,
                            rep.local(p, first)));
    }
    if (managed && first == kNone)
      rep.add("drain", p, kNone,
              fmt::format("r{} has no OPT_STEP (mode {} needs exactly one)", prog.rank.v, to_string(t.set->mode)));
  }
}

}  // namespace ppstream::verify_detail
