// The what-if of ppstream's own traces (docs/whatif.md "Our traces"): the trace's config is
// compiled again (every pass, place-reductions included), verified, and joined slice by slice
// with the trace; the measured costs drive the engine (MeasuredCostModel); ideal costs, the
// attribution by DP rank / PP rank / op type / worker, and the --reduce-grad counterfactual are
// engine runs of compiled, verified program sets.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include "engine/platform.h"
#include "measured_cost.h"
#include "our_trace.h"
#include "ppstream/config/config.h"
#include "ppstream/lower/lower.h"
#include "ppstream/program/format.h"
#include "ppstream/sim/cost_model.h"
#include "ppstream/sim/trials.h"
#include "ppstream/verify/verify.h"
#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {
namespace {

using Costs = std::vector<std::vector<MeasuredCost>>;

bool is_comm(OpKind op) { return op == OpKind::BATCH || op == OpKind::UNSHARD || op == OpKind::REDUCE_GRAD; }
bool has_cost(OpKind op) { return op != OpKind::RECORD && op != OpKind::WAIT; }

// Compiled (expanded, every pass) and verified: strict, and `ran_as` when the trace names the
// profile its programs ran under (a train run: run.json verified_under, as the launcher verified).
ProgramSet compile_lifted(const PipelineConfig& cfg, std::optional<PlatformKind> ran_as, const std::string& what) {
  LowerOptions lo;
  lo.expanded = true;
  ProgramSet set = compile(cfg, lo);
  VerifyOptions vo;
  if (ran_as && *ran_as != PlatformKind::STRICT) vo.platforms.push_back(*ran_as);
  require_verified(set, vo, what);
  return set;
}

// A train run's trace: the engine profile it was verified under (run.json verified_under), and its
// programs.json must be the set compiled again from its config.yaml.
PlatformKind platform_of(const OurTrace& t) {
  if (t.platform.empty()) return PlatformKind::ASCEND_MINDSPORE;
  const auto k = parse_platform(t.platform);
  if (!k)
    throw LiftError(fmt::format("whatif: {}: run.json verified_under '{}': expected one of {}", t.path, t.platform,
                                platform_names()));
  return *k;
}

// The profile a train run is re-simulated under: what its runtime really does. A CPU run is
// verified under cpu-serial (every send a rendezvous) but MCCL's sends are eager (cpu-mccl);
// cpu-mccl only removes waits, so the set verified under cpu-serial runs under it too
// (docs/semantics.md "Platform profiles").
PlatformKind resim_platform(PlatformKind verified_under) {
  return verified_under == PlatformKind::CPU_SERIAL ? PlatformKind::CPU_MCCL : verified_under;
}

void check_programs_ran(const OurTrace& t, const ProgramSet& set) {
  if (t.programs_path.empty()) return;
  std::ifstream f(t.programs_path);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f.good() && !f.eof()) throw LiftError("whatif: cannot read " + t.programs_path);
  if (!(parse_json(text, t.programs_path) == set))
    throw LiftError(fmt::format("whatif: {}: the programs that ran differ from those compiled from {} (a config "
                                "edited after the run?)",
                                t.programs_path, t.config_path));
}

// The slice of each instruction, consumed from `t` (what is left afterwards names no instruction).
struct Joined {
  std::vector<std::vector<const OurSlice*>> slice;  // [prog][instr], nullptr: not drawn
};

// Whether a compute instruction without a slice is a hole in the trace rather than an undrawn
// zero-length one. A train run's runtime draws every F / B / OPT_STEP / RESHARD it runs
// (python/ppstream/mindspore/training/trace.py), whatever it cost; the simulator and replay draw
// compute of length > 0 only, so there a missing slice is a hole when the config's `cost:`
// section gives the instruction a time > 0 (SimCostModel, no straggler draw).
struct MustBeDrawn {
  std::function<bool(const Program&, const Instr&)> test;
  std::string why;  // for the message
};

MustBeDrawn must_be_drawn(const OurTrace& t, const PipelineConfig& cfg, const ProgramSet& set) {
  const sim::TrialSetup setup = sim::trial_setup(cfg, set.world);
  auto model = std::make_shared<const sim::SimCostModel>(set, cfg, setup.cost, sim::StragglerModel());
  const bool train = !t.programs_path.empty();
  return {[model, train](const Program& p, const Instr& i) {
            const bool runtime_draws = i.op == OpKind::F || i.op == OpKind::B || i.op == OpKind::OPT_STEP ||
                                       i.op == OpKind::RESHARD;
            return (train && runtime_draws) || model->compute_ms(p, i) > 0;
          },
          train ? "a train run's runtime draws every F, B, OPT_STEP and RESHARD it runs"
                : "its config's cost: gives it a time > 0 ms, and compute of length > 0 is always drawn"};
}

Joined join(const ProgramSet& set, OurSlices& slices, const std::string& path, const std::string& cfg_path,
            int32_t step, const MustBeDrawn& drawn) {
  Joined j;
  j.slice.resize(set.programs.size());
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    j.slice[p].assign(prog.instrs.size(), nullptr);
    auto& row = slices[prog.rank.v];
    std::map<std::string, size_t> taken;  // per text: slices joined so far
    // The first compute instruction the trace should draw but does not: reported after the
    // slices that name no instruction (a renamed slice is that, not a lost one).
    std::string missing;
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      if (!has_cost(i.op)) continue;
      const std::string line = to_line(prog, i);
      const auto it = row.find(line);
      size_t& n = taken[line];
      if (it == row.end() || n >= it->second.size()) {
        if (is_comm(i.op))
          throw LiftError(fmt::format("whatif: {}: no slice for '{}' (rank {}), an instruction of the programs "
                                      "compiled from {}: the trace and its config disagree",
                                      path, line, prog.rank.v, cfg_path));
        if (drawn.test(prog, i) && missing.empty())
          missing = fmt::format("whatif: {}: step {}: rank {}: no slice for '{}' (instruction #{} of the programs "
                                "compiled from {}): {}; the trace lost it",
                                path, step, prog.rank.v, line, k, cfg_path, drawn.why);
        continue;  // compute of zero length is not drawn
      }
      j.slice[p][k] = &it->second[n++];
    }
    for (const auto& [text, list] : row) {
      const auto t = taken.find(text);
      if (t == taken.end() || t->second < list.size())
        throw LiftError(fmt::format("whatif: {}: slice '{}' of rank {} names no instruction of the programs compiled "
                                    "from {} ({} slice(s) of that text, {} such instruction(s))",
                                    path, text, prog.rank.v, cfg_path, list.size(), t == taken.end() ? 0 : t->second));
    }
    if (!missing.empty()) throw LiftError(missing);
  }
  for (const auto& [rank, row] : slices)
    if (rank < 0 || rank >= static_cast<int32_t>(set.programs.size()) || set.programs[static_cast<size_t>(rank)].rank.v != rank)
      throw LiftError(fmt::format("whatif: {}: rank {} is not a rank of the programs compiled from {}", path, rank, cfg_path));
  return j;
}

using OpKey = std::tuple<int32_t, P2PKind, int32_t, int32_t>;  // (rank, kind, mb, stage): one P2P op of a step

// Under eager sends with serial batches (cpu-mccl, docs/whatif.md "Train run directories"), when
// each P2P op of the trace was posted and matched, by the engine's rule applied to the slices: op
// 0 of a BATCH is posted at the slice's start, op k at op k-1's match; a send is matched at its
// post, a receive at max(its post, its send's post). The slices time BATCHes, not their ops, so
// the post of an op after a receive is that receive's match so estimated.
class EagerPosts {
 public:
  struct At {
    const OurSlice* slice;
    const Instr* batch;
    size_t pos;
    Rank rank;
  };
  explicit EagerPosts(const std::map<OpKey, At>& ops) : ops_(ops) {}

  double matched(const OpKey& k) {
    if (const auto it = memo_.find(k); it != memo_.end()) return it->second;
    const At& a = at(k);
    const P2POp& op = a.batch->p2p[a.pos];
    if (!busy_.insert(k).second)
      throw LiftError(fmt::format("whatif: rank {}: the trace's P2P ops wait on each other in a cycle at '{}'",
                                  a.rank.v, to_text(op)));
    double t = posted(k);
    if (!is_send(op.kind)) {
      const P2POp m = mirror_of(op, a.rank);  // ir.h: the peer's op that matches this one
      const OpKey mk{op.peer.v, m.kind, m.mb.v, m.stage.v};
      if (!ops_.count(mk))
        throw LiftError(fmt::format("whatif: rank {}: '{}' has no mirror '{}' on rank {} in the trace", a.rank.v,
                                    to_text(op), to_text(m), op.peer.v));
      t = std::max(t, posted(mk));
    }
    busy_.erase(k);
    return memo_[k] = t;
  }

 private:
  const At& at(const OpKey& k) const { return ops_.at(k); }  // every op of a drawn BATCH is in ops_
  double posted(const OpKey& k) {
    const At& a = at(k);
    if (a.pos == 0) return a.slice->start_ms;
    const P2POp& prev = a.batch->p2p[a.pos - 1];
    return matched({a.rank.v, prev.kind, prev.mb.v, prev.stage.v});
  }
  const std::map<OpKey, At>& ops_;
  std::map<OpKey, double> memo_;
  std::set<OpKey> busy_;
};

// The measured cost of every instruction (rules: measured_cost.h, docs/whatif.md). `eager`: the
// profile's sends are eager (Platform::eager_sends): a BATCH's transfer is its end minus its last
// op's match (EagerPosts), not minus the latest post of its own and its mirrors' batches.
MeasuredTable measure(const ProgramSet& set, const Joined& j, const World& world, bool eager) {
  // Where each P2P op sits: (rank, kind, mb, stage) → its batch's slice.
  std::map<OpKey, const OurSlice*> batch_of;
  std::map<OpKey, EagerPosts::At> op_at;
  // Collective members by (op, stage, group, occurrence).
  std::map<std::tuple<OpKind, int32_t, int32_t, int32_t>, double> last_arrival;
  const auto group_of = [&](const Program& prog, const Instr& i) {
    return i.op == OpKind::REDUCE_GRAD ? prog.pp_rank : world.group_of(GroupKind::SHARD, prog.rank.v);
  };
  std::vector<std::map<std::pair<OpKind, int32_t>, int32_t>> occ(set.programs.size());
  const auto occurrence = [&](size_t p, const Instr& i) { return occ[p][{i.op, i.stage.v}]++; };
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      const OurSlice* s = j.slice[p][k];
      if (!s) continue;
      if (i.op == OpKind::BATCH)
        for (size_t pos = 0; pos < i.p2p.size(); ++pos) {
          const P2POp& op = i.p2p[pos];
          batch_of[{prog.rank.v, op.kind, op.mb.v, op.stage.v}] = s;
          op_at[{prog.rank.v, op.kind, op.mb.v, op.stage.v}] = {s, &i, pos, prog.rank};
        }
      if (i.op == OpKind::UNSHARD || i.op == OpKind::REDUCE_GRAD) {
        double& a = last_arrival[{i.op, i.stage.v, group_of(prog, i), occurrence(p, i)}];
        a = std::max(a, s->start_ms + s->arrival_ms);
      }
    }
  }
  for (auto& o : occ) o.clear();
  EagerPosts eager_posts(op_at);
  MeasuredTable table(static_cast<size_t>(world.pp * world.dp()));
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    auto& row = table.at(static_cast<size_t>(prog.rank.v));
    const std::vector<std::string> keys = instr_keys(prog);
    for (size_t k = 0; k < prog.instrs.size(); ++k) {
      const Instr& i = prog.instrs[k];
      const OurSlice* s = j.slice[p][k];
      if (!s) continue;
      MeasuredCost c;
      if (i.op == OpKind::BATCH && eager && !i.p2p.empty()) {
        const P2POp& last = i.p2p.back();
        c.ms = std::max(0.0, s->end_ms - eager_posts.matched({prog.rank.v, last.kind, last.mb.v, last.stage.v}));
      } else if (i.op == OpKind::BATCH) {
        double posted = s->start_ms;
        for (const P2POp& op : i.p2p) {
          const P2POp mirror = mirror_of(op, prog.rank);  // ir.h: the peer's op that matches this one
          const auto it = batch_of.find({op.peer.v, mirror.kind, mirror.mb.v, mirror.stage.v});
          if (it == batch_of.end())
            throw LiftError(fmt::format("whatif: rank {}: '{}' has no mirror '{}' on rank {} in the trace", prog.rank.v,
                                        to_line(prog, i), to_text(mirror), op.peer.v));
          posted = std::max(posted, it->second->start_ms);
        }
        c.ms = std::max(0.0, s->end_ms - posted);
      } else if (i.op == OpKind::UNSHARD || i.op == OpKind::REDUCE_GRAD) {
        const double last = last_arrival.at({i.op, i.stage.v, group_of(prog, i), occurrence(p, i)});
        c.ms = std::max(0.0, s->end_ms - last);
        c.arrival_ms = s->arrival_ms;
      } else {
        c.ms = s->end_ms - s->start_ms;
      }
      row[keys[k]] = c;
    }
  }
  return table;
}

// A train run's host gaps (LiftedTrace::Step::host_gap_ms): per rank, each drawn instruction's
// slice start minus the end of the rank's previous drawn slice in program order (the first: minus
// the step's origin, 0), never negative; 0 for RECORD / WAIT and undrawn compute.
std::vector<std::vector<double>> host_gaps(const ProgramSet& set, const Joined& j) {
  std::vector<std::vector<double>> out(set.programs.size());
  for (size_t p = 0; p < set.programs.size(); ++p) {
    out[p].assign(set.programs[p].instrs.size(), 0.0);
    double cursor = 0;
    for (size_t k = 0; k < out[p].size(); ++k) {
      const OurSlice* s = j.slice[p][k];
      if (!s) continue;
      out[p][k] = std::max(0.0, s->start_ms - cursor);
      cursor = std::max(cursor, s->end_ms);
    }
  }
  return out;
}

EngineResult run_measured(const ProgramSet& set, const Costs& costs, PlatformKind platform, const std::string& what,
                          const std::vector<std::vector<double>>* host_gap_ms = nullptr) {
  MeasuredCostModel model(set, costs, host_gap_ms);
  EngineOptions eo;
  eo.platform = platform;
  eo.cost = &model;
  EngineResult r = run_engine(set, eo);
  if (!r.completed) throw LiftError("whatif: " + what + " deadlocked:\n" + format_deadlock(set, r));
  return r;
}

double makespan(const ProgramSet& set, const Costs& costs, PlatformKind platform, const std::string& what) {
  return run_measured(set, costs, platform, what).makespan_ms;
}

// A train run's step re-simulated with its host gaps: per rank, its last instruction's end minus
// its own step start (`rank_start_ms`), the longest over ranks — as the measured step is the
// longest step marker.
double step_with_gaps(const ProgramSet& set, const Costs& costs, const LiftedTrace::Step& st, PlatformKind platform) {
  const EngineResult r =
      run_measured(set, costs, platform, "the lifted programs with their measured costs and host gaps", &st.host_gap_ms);
  double longest = 0;
  for (size_t p = 0; p < r.timing.size(); ++p) {
    double end = 0;
    for (const InstrTiming& t : r.timing[p]) end = std::max(end, t.end_ms);
    longest = std::max(longest, end - st.rank_start_ms.at(p));
  }
  return longest;
}

// The ideal groups instructions by op kind and virtual stage (BATCH and OPT_STEP: op kind only):
// a stage's layer count is the config's (stage 7 of the seed's layout has 3 layers, the others 6),
// an imbalance the configuration decides, not a straggler.
using IdealKey = std::pair<OpKind, int32_t>;
IdealKey ideal_key(const Instr& i) {
  const bool staged = i.op != OpKind::BATCH && i.op != OpKind::OPT_STEP;
  return {i.op, staged ? i.stage.v : -1};
}

struct Ideal {
  std::map<IdealKey, MeasuredCost> by_key;
  std::set<OpKind> ops;
};

double agg(std::vector<double> v, bool median) {
  if (v.empty()) return 0;
  if (median) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// Per (op kind, stage) over every DP rank and step: compute by its mean (or median), communication and
// arrival delays by their median (the artifact's rule, as the Megatron path).
Ideal ideal_of(const ProgramSet& set, const std::vector<Costs>& steps, Agg a) {
  std::map<IdealKey, std::pair<std::vector<double>, std::vector<double>>> v;
  for (const Costs& m : steps)
  for (size_t p = 0; p < set.programs.size(); ++p)
    for (size_t k = 0; k < set.programs[p].instrs.size(); ++k) {
      const Instr& i = set.programs[p].instrs[k];
      if (!has_cost(i.op)) continue;
      auto& xs = v[ideal_key(i)];
      xs.first.push_back(m[p][k].ms);
      xs.second.push_back(m[p][k].arrival_ms);
    }
  Ideal id;
  for (auto& [key, xs] : v) {
    id.by_key[key] = {agg(xs.first, a == Agg::MEDIAN || is_comm(key.first)), agg(xs.second, true)};
    id.ops.insert(key.first);
  }
  return id;
}

// Costs with `keep(program, instr)` measured and the rest ideal.
Costs mixed(const ProgramSet& set, const Costs& m, const Ideal& id,
            const std::function<bool(const Program&, const Instr&)>& keep) {
  Costs out = m;
  for (size_t p = 0; p < set.programs.size(); ++p)
    for (size_t k = 0; k < set.programs[p].instrs.size(); ++k) {
      const Instr& i = set.programs[p].instrs[k];
      if (!has_cost(i.op) || keep(set.programs[p], i)) continue;
      out[p][k] = id.by_key.at(ideal_key(i));
    }
  return out;
}

}  // namespace

LiftedTrace lift_ppstream_trace(const std::string& path, const std::optional<std::pair<int32_t, int32_t>>& steps) {
  OurTrace t = read_our_trace(path);
  LiftedTrace out;
  out.path = path;
  out.config_path = t.config_path;
  const std::string& cfg_path = t.config_path;
  if (!std::filesystem::exists(cfg_path))
    throw LiftError(fmt::format("whatif: {}: no {} beside it (the configuration that ran; `ppstream simulate "
                                "--trace`, `ppstream replay --trace DIR` and `ppstream train` write it)",
                                path, cfg_path));
  if (steps) {
    std::erase_if(t.steps, [&](const OurStep& st) { return st.step < steps->first || st.step > steps->second; });
    if (t.steps.empty()) throw LiftError(fmt::format("whatif: {}: no step in {}-{}", path, steps->first, steps->second));
  }
  out.config = load_config_file(cfg_path);
  out.platform = platform_of(t);
  if (!t.platform.empty()) {
    out.ran_as = out.platform;
    out.platform = resim_platform(*out.ran_as);
  }
  out.programs = compile_lifted(out.config, out.ran_as, fmt::format("whatif: the programs lifted from {}", path));
  check_programs_ran(t, out.programs);
  const ProgramSet& set = out.programs;
  const World& world = set.world;
  const MustBeDrawn drawn = must_be_drawn(t, out.config, set);
  for (OurStep& st : t.steps) {
    const int64_t ranks = int64_t{world.pp} * world.dp();
    std::vector<int32_t> missing, outside;  // name them: a count alone does not say which file lost them
    for (int32_t r = 0; r < ranks; ++r)
      if (!st.slices.contains(r)) missing.push_back(r);
    for (const auto& [r, row] : st.slices)
      if (r >= ranks) outside.push_back(r);
    if (!missing.empty() || !outside.empty()) {
      const auto few = [](const std::vector<int32_t>& v) {
        return v.size() <= 8 ? fmt::format("{}", fmt::join(v, ", "))
                             : fmt::format("{}, … ({} in all)", fmt::join(v.begin(), v.begin() + 8, ", "), v.size());
      };
      throw LiftError(fmt::format(
          "whatif: {}: step {} draws {} ranks, the configuration's world has {} (ranks 0..{}){}{}: every collective "
          "member must be seen: a `replay --trace` directory or a train run needs every rank's file, a simulate trace "
          "`ppstream simulate --cluster --trace-every-rank`",
          path, st.step, st.slices.size(), ranks, ranks - 1,
          missing.empty() ? std::string() : fmt::format("; no slice of rank {}", few(missing)),
          outside.empty() ? std::string() : fmt::format("; slices of rank {} outside the world", few(outside))));
    }
    const Joined j = join(set, st.slices, path, cfg_path, st.step, drawn);
    LiftedTrace::Step s;
    s.step = st.step;
    s.measured_ms = st.measured_ms;
    s.table = measure(set, j, world, engine::platform_for(out.platform).eager_sends());
    s.costs = costs_for(set, s.table);
    if (!t.programs_path.empty()) {
      s.host_gap_ms = host_gaps(set, j);
      for (const Program& prog : set.programs) {
        const auto it = st.rank_start_ms.find(prog.rank.v);
        s.rank_start_ms.push_back(it == st.rank_start_ms.end() ? 0.0 : it->second);
      }
    }
    out.steps.push_back(std::move(s));
  }
  out.slices_read = t.slices_read;
  out.waits_skipped = t.waits_skipped;
  out.train_run = !t.programs_path.empty();
  return out;
}

double resimulated_step_ms(const LiftedTrace& l, size_t k, PlatformKind platform) {
  const LiftedTrace::Step& st = l.steps.at(k);
  if (st.host_gap_ms.empty()) return makespan(l.programs, st.costs, platform, "the lifted programs with their measured costs");
  return step_with_gaps(l.programs, st.costs, st, platform);
}

WhatIfResult analyze_ppstream_trace(const std::string& path, const WhatIfOptions& opts) {
  LiftedTrace lifted = lift_ppstream_trace(path, opts.steps);
  const std::string& cfg_path = lifted.config_path;
  const PipelineConfig& cfg = lifted.config;
  const ProgramSet& set = lifted.programs;
  const World& world = set.world;
  const PlatformKind platform = lifted.platform;
  const std::optional<PlatformKind>& ran_as = lifted.ran_as;
  std::vector<MeasuredTable> tables;
  std::vector<Costs> ms;
  for (LiftedTrace::Step& st : lifted.steps) {  // moved: the steps' figures stay in `lifted`
    tables.push_back(std::move(st.table));
    ms.push_back(std::move(st.costs));
  }
  const Ideal id = ideal_of(set, ms, opts.agg);
  const auto n_steps = static_cast<int64_t>(ms.size());

  WhatIfResult res;
  res.dp = world.dp();
  res.pp = world.pp;
  res.vpp = world.vpp;
  res.ops = lifted.slices_read;
  res.ppstream_trace = true;
  for (const Program& p : set.programs) res.graph_ops += static_cast<int64_t>(p.instrs.size());
  res.graph_ops /= world.dp();  // per DP rank: the instructions of one pipeline replica
  // What compile_lifted verified the set under.
  res.lifted.programs = static_cast<int64_t>(set.programs.size());
  for (const Program& p : set.programs) res.lifted.instructions += static_cast<int64_t>(p.instrs.size());
  res.lifted.verified_under = {to_string(PlatformKind::STRICT)};
  if (ran_as && *ran_as != PlatformKind::STRICT) res.lifted.verified_under.emplace_back(to_string(*ran_as));
  int64_t runs = 0;
  const int64_t total = n_steps * (2 + (opts.reduce_grad ? 1 : 0) + res.dp + res.pp +
                                   static_cast<int64_t>(id.ops.size()) + int64_t{res.dp} * res.pp + 4) + 2;
  const auto run = [&](const ProgramSet& s, const Costs& c, const std::string& what) {
    const double v = makespan(s, c, platform, what);
    if (opts.progress) opts.progress(++runs, total);
    return v;
  };
  // Mean over the steps of the step with `keep` measured (each step's own costs), the rest ideal.
  using Keep = std::function<bool(const Program&, const Instr&)>;
  const auto mean_run = [&](const Keep& keep, const std::string& what) {
    double sum = 0;
    for (const Costs& m : ms) sum += run(set, mixed(set, m, id, keep), what);
    return sum / static_cast<double>(n_steps);
  };
  const Keep none = [](const Program&, const Instr&) { return false; };
  const double ideal = run(set, mixed(set, ms.front(), id, none), "the lifted programs with ideal costs");
  double resim = 0, measured = 0;
  for (size_t k = 0; k < ms.size(); ++k) {
    StepFigures f;
    f.step = lifted.steps[k].step;
    f.measured_ms = lifted.steps[k].measured_ms;
    f.nodelay_ms = run(set, ms[k], "the lifted programs with their measured costs");
    // A train run's launch delays are its host gaps (LiftedTrace::Step::host_gap_ms); other
    // traces have none lifted: re-simulated = nodelay.
    const LiftedTrace::Step& ls = lifted.steps[k];
    f.resimulated_ms = ls.host_gap_ms.empty() ? f.nodelay_ms : step_with_gaps(set, ms[k], ls, platform);
    f.ideal_ms = ideal;
    f.slowdown = f.nodelay_ms / ideal;
    res.max_resim_error = std::max(res.max_resim_error, std::abs(f.resimulated_ms - f.measured_ms) / f.measured_ms);
    resim += f.nodelay_ms / static_cast<double>(n_steps);
    measured += f.measured_ms / static_cast<double>(n_steps);
    res.steps.push_back(f);
  }
  res.slowdown = resim / ideal;
  // As the Megatron path defines them (mean measured / mean nodelay, 1 − their inverse): here the
  // step share that the programs and measured costs do not explain (host issue and wake-up gaps).
  res.launch_slowdown = measured / resim;
  res.launch_delay_share = 1.0 - resim / measured;
  res.notes.push_back(fmt::format("lifted: {} programs compiled from {} ({} policy), verified; {} step(s), {} slices "
                                  "joined, {} EVENT_WAIT slices left to the engine; engine profile {}",
                                  set.programs.size(), cfg_path, to_string(cfg.reduce_grad), n_steps, lifted.slices_read,
                                  lifted.waits_skipped, to_string(platform)));
  if (lifted.train_run) {
    res.notes.push_back(fmt::format(
        "a train run (docs/whatif.md \"Train run directories\"): verified under {}, re-simulated under {}{}; launch "
        "delays = the host's gaps between instructions (the engine's host issue time), re-simulated with them: max "
        "error {:.4f} %; without them (nodelay, what S, the attribution and the prediction use): launch_slowdown = "
        "measured {:.3f} ms / nodelay {:.3f} ms (mean step)",
        to_string(*ran_as), to_string(platform),
        platform == PlatformKind::CPU_MCCL ? " (MCCL's eager sends)" : "", 100 * res.max_resim_error, measured, resim));
  } else {
    res.notes.push_back(fmt::format("launch delays: not lifted per instruction (the engine has no host issue cost); "
                                    "nodelay = re-simulated, launch_slowdown = measured {:.3f} ms / re-simulated {:.3f} ms "
                                    "(mean step)",
                                    measured, resim));
  }

  if (opts.reduce_grad && *opts.reduce_grad != ReducePolicy::NONE) {
    PipelineConfig c2 = cfg;
    c2.reduce_grad = *opts.reduce_grad;
    const ProgramSet set2 =
        compile_lifted(c2, ran_as, fmt::format("whatif: the {} programs of {}", to_string(c2.reduce_grad), path));
    WhatIfResult::Prediction pr;
    pr.policy = to_string(c2.reduce_grad);
    pr.traced_policy = to_string(cfg.reduce_grad);
    for (const MeasuredTable& table : tables) {
      pr.per_step_ms.push_back(run(set2, costs_for(set2, table), "the re-placed programs, measured costs"));
      pr.measured_costs_ms += pr.per_step_ms.back() / static_cast<double>(n_steps);
    }
    pr.ideal_costs_ms = run(set2, mixed(set2, costs_for(set2, tables.front()), id, none),
                            "the re-placed programs, ideal costs");
    pr.traced_ms = resim;
    pr.traced_ideal_ms = ideal;
    res.predicted = pr;
  }

  const int32_t dp = res.dp;
  const auto dp_index = [dp](const Program& p) { return p.rank.v - p.pp_rank * dp; };
  const double span = resim - ideal;
  if (res.slowdown < opts.decompose_threshold) {
    res.notes.push_back(fmt::format("S = {:.4f} is below the attribution threshold {:.4f}: no attribution, no M_W, "
                                    "no M_S",
                                    res.slowdown, opts.decompose_threshold));
    return res;
  }
  res.attributed = true;
  if (span != 0) {
    const int32_t last = world.pp - 1;
    const double rem = mean_run([&](const Program& p, const Instr&) { return p.pp_rank != last; }, "M_S");
    const double add = mean_run([&](const Program& p, const Instr&) { return p.pp_rank == last; }, "M_S");
    res.m_s = (resim - rem) / span;
    res.m_s_add = (add - ideal) / span;
  }
  for (int32_t d = 0; d < dp; ++d)
    res.by_dp_rank[std::to_string(d)] =
        mean_run([&](const Program& p, const Instr&) { return dp_index(p) == d; }, "by DP rank") / ideal;
  for (int32_t s = 0; s < world.pp; ++s)
    res.by_stage[std::to_string(s)] =
        mean_run([&](const Program& p, const Instr&) { return p.pp_rank == s; }, "by stage") / ideal;
  for (const OpKind op : id.ops)
    res.by_op_type[to_string(op)] =
        mean_run([op](const Program&, const Instr& i) { return i.op == op; }, "by op type") / ideal;
  // Workers: keep one (DP index, PP rank) measured, the rest ideal (the paper's S_w, Eq. 4, with
  // the worker itself rather than the artifact's min(S_dp, S_stage) score).
  res.worker_score.assign(static_cast<size_t>(dp), std::vector<double>(static_cast<size_t>(world.pp)));
  std::vector<std::tuple<double, int32_t, int32_t>> ranked;  // (score, pp rank, dp index)
  for (int32_t d = 0; d < dp; ++d)
    for (int32_t s = 0; s < world.pp; ++s) {
      const double sw =
          mean_run([&](const Program& p, const Instr&) { return dp_index(p) == d && p.pp_rank == s; }, "by worker") / ideal;
      res.worker_score[static_cast<size_t>(d)][static_cast<size_t>(s)] = sw;
      res.by_worker[fmt::format("{},{}", d, s)] = sw;
      ranked.emplace_back(sw, s, d);
    }
  std::sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) {
    if (std::get<0>(x) != std::get<0>(y)) return std::get<0>(x) > std::get<0>(y);
    return std::make_pair(std::get<1>(x), std::get<2>(x)) < std::make_pair(std::get<1>(y), std::get<2>(y));
  });
  const auto n = static_cast<size_t>((static_cast<int64_t>(ranked.size()) * 3 + 99) / 100);
  std::set<std::pair<int32_t, int32_t>> chosen;
  for (size_t i = 0; i < n; ++i) {
    chosen.emplace(std::get<2>(ranked[i]), std::get<1>(ranked[i]));
    res.m_w_workers.emplace_back(std::get<2>(ranked[i]), std::get<1>(ranked[i]));
  }
  const auto is_chosen = [&](const Program& p) { return chosen.count({dp_index(p), p.pp_rank}) > 0; };
  const double rem = mean_run([&](const Program& p, const Instr&) { return !is_chosen(p); }, "M_W");
  const double add = mean_run([&](const Program& p, const Instr&) { return is_chosen(p); }, "M_W");
  if (span != 0) res.m_w = (resim - rem) / span, res.m_w_add = (add - ideal) / span;
  return res;
}

}  // namespace ppstream::whatif
