// The memory model (include/ppstream/sim/memory.h): per rank, every buffer's [alloc, free)
// interval from the engine's timings, then one sweep in time order (frees first at a tie).
#include "ppstream/sim/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include "yaml_util.h"

namespace ppstream::sim {
namespace {

const char* kSection = "cost";

enum class Kind : uint8_t { ACTIVATION, PARAM, GRAD, RECV };

// One change of a rank's holding: `bytes` (negative: a free) of `kind` at `t`; `stashes` counts
// activation stashes (+1 at F's start, -1 when the last part is freed).
struct Change {
  double t = 0;
  double bytes = 0;
  Kind kind = Kind::ACTIVATION;
  int32_t stashes = 0;
};

void add(MemoryBreakdown& m, Kind k, double bytes) {
  switch (k) {
    case Kind::ACTIVATION: m.activations += bytes; break;
    case Kind::PARAM: m.params += bytes; break;
    case Kind::GRAD: m.grads += bytes; break;
    case Kind::RECV: m.recv += bytes; break;
  }
}

// Key of a compute op in one program: (op, mb, stage).
using ComputeKey = std::tuple<OpKind, int32_t, int32_t>;

// Phase 1: every buffer of one program as a pair of changes.
class Collector {
 public:
  Collector(const Program& p, const std::vector<InstrTiming>& t, const std::vector<LayerRange>& layers,
            const MemorySpec& spec, double step_end)
      : p_(p), t_(t), layers_(layers), spec_(spec), step_end_(step_end) {}

  std::vector<Change> run() {
    index_compute();
    for (size_t k = 0; k < p_.instrs.size(); ++k) visit(k);
    close_stage_buffers();
    return std::move(out_);
  }

 private:
  double layers_of(Stage s) const {
    if (s.v < 0 || static_cast<size_t>(s.v) >= layers_.size())
      throw std::invalid_argument(fmt::format("memory: stage s{} on r{} has no layer count ({} stages known)", s.v,
                                              p_.rank.v, layers_.size()));
    return layers_[static_cast<size_t>(s.v)].count();
  }
  void change(double t, double bytes, Kind kind, int32_t stashes = 0) {
    if (bytes != 0 || stashes != 0) out_.push_back({t, bytes, kind, stashes});
  }
  void index_compute() {
    for (size_t k = 0; k < p_.instrs.size(); ++k) {
      const Instr& i = p_.instrs[k];
      if (i.op == OpKind::F || i.op == OpKind::B || i.op == OpKind::I || i.op == OpKind::W)
        compute_.emplace(ComputeKey{i.op, i.mb.v, i.stage.v}, k);
    }
  }
  // End of the compute op consuming a received buffer: F for RECV_F, B or I for RECV_B.
  double consumer_end(const P2POp& op) const {
    const std::array<OpKind, 2> kinds = op.kind == P2PKind::RECV_F ? std::array{OpKind::F, OpKind::F}
                                                                   : std::array{OpKind::B, OpKind::I};
    for (OpKind k : kinds)
      if (auto it = compute_.find({k, op.mb.v, op.stage.v}); it != compute_.end()) return t_[it->second].end_ms;
    return step_end_;  // no consumer on this rank: held to the step end
  }
  void visit(size_t k) {
    const Instr& i = p_.instrs[k];
    const InstrTiming& t = t_[k];
    const double stash = layers_of_if_staged(i) * spec_.stash_bytes_per_layer;
    // A piece of a bucketed backward frees its bucket's share of the stash; the microbatch's
    // stash leaves the count with the last piece.
    const double share = is_compute_op(i.op) ? bucket_share(i.bucket, static_cast<int32_t>(layers_of(i.stage))) : 1.0;
    const int32_t done = i.bucket.index + 1 == i.bucket.count ? -1 : 0;
    switch (i.op) {
      case OpKind::F: change(t.start_ms, stash, Kind::ACTIVATION, +1); break;
      case OpKind::B: change(t.end_ms, -stash * share, Kind::ACTIVATION, done); break;
      case OpKind::I: change(t.end_ms, -stash * (1 - spec_.dw_stash_fraction), Kind::ACTIVATION); break;
      case OpKind::W: change(t.end_ms, -stash * spec_.dw_stash_fraction * share, Kind::ACTIVATION, done); break;
      case OpKind::UNSHARD: unshard_.emplace(i.stage.v, t.start_ms); break;
      case OpKind::RESHARD: reshard_[i.stage.v] = t.end_ms; break;
      case OpKind::REDUCE_GRAD: reduced_[i.stage.v].push_back({i.bucket, t.end_ms}); break;
      case OpKind::OPT_STEP: opt_end_ = t.end_ms; break;
      case OpKind::BATCH:
        for (const P2POp& op : i.p2p)
          if (!is_send(op.kind)) {
            change(t.start_ms, spec_.recv_buffer_bytes, Kind::RECV);
            change(consumer_end(op), -spec_.recv_buffer_bytes, Kind::RECV);
          }
        break;
      default: break;
    }
    if (i.op == OpKind::B || i.op == OpKind::I || i.op == OpKind::W) first_backward_.emplace(i.stage.v, t.start_ms);
  }
  static bool is_compute_op(OpKind k) { return k == OpKind::F || k == OpKind::B || k == OpKind::I || k == OpKind::W; }
  double layers_of_if_staged(const Instr& i) const { return is_compute_op(i.op) ? layers_of(i.stage) : 0.0; }
  // Phase 2: the per-stage buffers (parameters, gradients) once every end is known.
  void close_stage_buffers() {
    for (const auto& [s, start] : unshard_) {
      const double bytes = layers_of(Stage{s}) * spec_.unsharded_param_bytes_per_layer;
      const auto it = reshard_.find(s);
      change(start, bytes, Kind::PARAM);
      change(it == reshard_.end() ? step_end_ : it->second, -bytes, Kind::PARAM);
    }
    const double no_reduction_end = opt_end_ < 0 ? step_end_ : opt_end_;
    // Gradient buffers: the stage's whole buffer from its first backward; each bucket's share
    // freed at the end of that bucket's reduction (the whole stage: one bucket, share 1).
    for (const auto& [s, start] : first_backward_) {
      const double layers = layers_of(Stage{s});
      const double bytes = layers * spec_.grad_buffer_bytes_per_layer;
      const auto it = reduced_.find(s);
      change(start, bytes, Kind::GRAD);
      if (it == reduced_.end()) {
        change(no_reduction_end, -bytes, Kind::GRAD);
        continue;
      }
      for (const auto& [bucket, end] : it->second)
        change(end, -bytes * bucket_share(bucket, static_cast<int32_t>(layers)), Kind::GRAD);
    }
  }

  const Program& p_;
  const std::vector<InstrTiming>& t_;
  const std::vector<LayerRange>& layers_;
  const MemorySpec& spec_;
  double step_end_;
  std::map<ComputeKey, size_t> compute_;
  std::map<int32_t, double> unshard_, reshard_, first_backward_;
  std::map<int32_t, std::vector<std::pair<Bucket, double>>> reduced_;  // stage → (bucket, reduction end)
  double opt_end_ = -1;
  std::vector<Change> out_;
};

// Phase 3: the sweep. Frees first at a tie; the peak is the first instant the maximum is held.
RankMemory sweep(const Program& p, std::vector<Change> changes, bool curves) {
  std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    if (a.t != b.t) return a.t < b.t;
    return a.bytes < 0 && b.bytes >= 0;
  });
  RankMemory r;
  r.rank = p.rank;
  r.pp_rank = p.pp_rank;
  if (curves) r.curve.push_back({0, 0});
  MemoryBreakdown now;
  int32_t stashes = 0;
  for (size_t k = 0; k < changes.size(); ++k) {
    const Change& c = changes[k];
    add(now, c.kind, c.bytes);
    stashes += c.stashes;
    // Judge the holding once every change at this instant of the same sign has applied.
    const bool last_of_group = k + 1 == changes.size() || changes[k + 1].t != c.t ||
                               ((changes[k + 1].bytes < 0) != (c.bytes < 0));
    if (!last_of_group) continue;
    const double total = now.total();
    if (total > r.peak_bytes) r.peak_bytes = total, r.peak_ms = c.t, r.at_peak = now, r.peak_stashes = stashes;
    if (curves) {
      if (r.curve.back().t_ms == c.t) r.curve.back().bytes = total;
      else r.curve.push_back({c.t, total});
    }
  }
  return r;
}

}  // namespace

const std::vector<std::string>& memory_cost_keys() {
  static const std::vector<std::string> keys = {"stash_bytes_per_layer", "dw_stash_fraction",
                                                "unsharded_param_bytes_per_layer", "grad_buffer_bytes_per_layer",
                                                "recv_buffer_bytes"};
  return keys;
}

MemorySpec parse_memory_spec(const std::string& cost_yaml, const CostSpec& cost) {
  MemorySpec m;
  m.stash_bytes_per_layer = cost.activation_bytes;
  m.unsharded_param_bytes_per_layer = cost.param_bytes_per_layer;
  m.grad_buffer_bytes_per_layer = cost.grad_bytes_per_layer;
  m.recv_buffer_bytes = cost.activation_bytes;
  const YAML::Node root = yaml::load_section(kSection, cost_yaml);
  auto num = [&](const char* key, double& field) {
    if (root[key]) field = yaml::number(kSection, key, root[key], 0.0);
  };
  num("stash_bytes_per_layer", m.stash_bytes_per_layer);
  num("dw_stash_fraction", m.dw_stash_fraction);
  if (m.dw_stash_fraction > 1.0) yaml::fail(kSection, "dw_stash_fraction", root["dw_stash_fraction"], "a fraction in [0, 1]");
  num("unsharded_param_bytes_per_layer", m.unsharded_param_bytes_per_layer);
  num("grad_buffer_bytes_per_layer", m.grad_buffer_bytes_per_layer);
  num("recv_buffer_bytes", m.recv_buffer_bytes);
  return m;
}

MemoryReport compute_memory(const ProgramSet& set, const EngineResult& run, const std::vector<LayerRange>& stage_layers,
                            const MemorySpec& spec, bool curves, const std::function<bool(const Program&)>& only) {
  if (!run.completed || run.timing.size() != set.programs.size())
    throw std::invalid_argument("memory: the run did not complete (a deadlocked step has no memory timeline)");
  MemoryReport rep;
  bool any = false;  // a computed rank seen
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const Program& prog = set.programs[p];
    if (only && !only(prog)) {
      rep.ranks.push_back({prog.rank, prog.pp_rank, 0, 0, {}, 0, {}, false});
      continue;
    }
    Collector c(prog, run.timing[p], stage_layers, spec, run.makespan_ms);
    rep.ranks.push_back(sweep(prog, c.run(), curves));
    if (rep.ranks.back().peak_bytes > rep.peak_bytes || !any)
      rep.peak_bytes = rep.ranks.back().peak_bytes, rep.peak_rank = prog.rank;
    any = true;
  }
  return rep;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024 && u < 4) v /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.2f} {}", v, units[u]);
}

}  // namespace ppstream::sim
