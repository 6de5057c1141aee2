#include "ppstream/sim/cost_model.h"

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>

#include "ppstream/sim/memory.h"
#include "yaml_util.h"

namespace ppstream::sim {
namespace {

const char* kSection = "cost";

// bytes / (GB/s) in ms; a zero bandwidth means the bandwidth term is free.
double transfer_ms(double bytes, double gb_per_s) { return gb_per_s > 0 ? bytes / (gb_per_s * 1e9) * 1e3 : 0.0; }

std::vector<double> stage_list(const YAML::Node& node, const std::string& key, int32_t num_stages) {
  if (!node.IsSequence() || static_cast<int32_t>(node.size()) != num_stages)
    yaml::fail(kSection, key, node, fmt::format("a list of {} times in ms, one per virtual stage", num_stages));
  std::vector<double> out;
  for (const auto& v : node) out.push_back(yaml::number(kSection, key, v, 0.0));
  return out;
}

// One cost key feeding a figure and the part of the figure it makes (its term).
struct Term {
  const char* key;   // "collective_alpha_ms"
  double value;      // the key's value
  double part;       // the figure's term the key enters (with the figure's other factors)
};

// Throws CostOverflow when `figure` (ms) is not finite: the keys whose own term is not finite,
// or, when every term is finite and only their sum overflows, all of them. Else records the
// figure in `largest` when it is the largest so far, with the key of its largest term.
void check_figure(double figure, const std::string& what, const std::vector<Term>& terms, LargestFigure& largest) {
  if (std::isfinite(figure)) {
    if (figure > largest.ms && !terms.empty()) {
      const Term& top = *std::max_element(terms.begin(), terms.end(),
                                          [](const Term& a, const Term& b) { return a.part < b.part; });
      largest = {what, figure, fmt::format("{}.{}", kSection, top.key), top.value};
    }
    return;
  }
  std::vector<const Term*> culprits;
  for (const Term& t : terms)
    if (!std::isfinite(t.part)) culprits.push_back(&t);
  if (culprits.empty())
    for (const Term& t : terms)
      if (t.value != 0) culprits.push_back(&t);
  std::vector<std::string> keys, named;
  for (const Term* t : culprits) {
    const std::string key = fmt::format("{}.{}", kSection, t->key);
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;  // one key in several terms
    keys.push_back(key);
    named.push_back(fmt::format("{} = {}", key, t->value));
  }
  throw CostOverflow(fmt::format("simulate: {} is {} ms: {} make{} it overflow a double; expected cost values whose "
                                 "times stay finite (docs/simulate.md)",
                                 what, figure, fmt::join(named, ", "), named.size() == 1 ? "s" : ""),
                     std::move(keys));
}

// The terms of a ring collective's time: (n-1)·alpha and (n-1)/n · bytes / bandwidth, ×`k`.
std::vector<Term> ring_terms(int32_t n, double k, double layers, const char* bytes_key, double bytes_per_layer,
                             double divisor, const char* bw_key, double bw, double alpha) {
  if (n <= 1) return {};
  const double steps = k * (n - 1), bytes = layers * bytes_per_layer / divisor;
  const double xfer = k * static_cast<double>(n - 1) / n * transfer_ms(bytes, bw);
  return {{"collective_alpha_ms", alpha, steps * alpha}, {bytes_key, bytes_per_layer, std::isfinite(bytes) ? xfer : bytes},
          {bw_key, bw, xfer}};
}

}  // namespace

const char* to_string(LinkSharing s) {
  switch (s) {
    case LinkSharing::DEDICATED: return "dedicated";
    case LinkSharing::FAIR: return "fair";
    case LinkSharing::P2P_PRIORITY: return "p2p_priority";
    case LinkSharing::REDUCE_PRIORITY: return "reduce_priority";
  }
  return "?";
}

CostSpec parse_cost_spec(const std::string& yaml_text, int32_t num_stages) {
  const YAML::Node root = yaml::load_section(kSection, yaml_text);
  std::vector<std::string> keys = {"forward_ms_per_layer", "backward_ms_per_layer", "stage_forward_ms", "stage_backward_ms",
                    "moe_dispatch_ms_per_layer", "moe_combine_ms_per_layer", "optimizer_ms", "p2p_latency_ms",
                    "p2p_bandwidth_gb_per_s", "activation_bytes", "grad_bytes_per_layer", "param_bytes_per_layer",
                    "collective_alpha_ms", "shard_bandwidth_gb_per_s", "replicate_bandwidth_gb_per_s", "link_sharing",
                    "backward_input_fraction", "host_issue_ms"};
  keys.insert(keys.end(), memory_cost_keys().begin(), memory_cost_keys().end());  // memory.h reads them
  yaml::check_keys(kSection, root, keys);
  CostSpec c;
  auto num = [&](const char* key, double& field) {
    if (root[key]) field = yaml::number(kSection, key, root[key], 0.0);
  };
  num("forward_ms_per_layer", c.forward_ms_per_layer);
  num("backward_ms_per_layer", c.backward_ms_per_layer);
  num("backward_input_fraction", c.backward_input_fraction);
  if (c.backward_input_fraction > 1.0)
    yaml::fail(kSection, "backward_input_fraction", root["backward_input_fraction"], "a fraction in [0, 1]");
  num("moe_dispatch_ms_per_layer", c.moe_dispatch_ms_per_layer);
  num("moe_combine_ms_per_layer", c.moe_combine_ms_per_layer);
  num("optimizer_ms", c.optimizer_ms);
  num("p2p_latency_ms", c.p2p_latency_ms);
  num("p2p_bandwidth_gb_per_s", c.p2p_bandwidth_gb_per_s);
  num("activation_bytes", c.activation_bytes);
  num("grad_bytes_per_layer", c.grad_bytes_per_layer);
  num("param_bytes_per_layer", c.param_bytes_per_layer);
  num("collective_alpha_ms", c.collective_alpha_ms);
  num("shard_bandwidth_gb_per_s", c.shard_bandwidth_gb_per_s);
  num("replicate_bandwidth_gb_per_s", c.replicate_bandwidth_gb_per_s);
  num("host_issue_ms", c.host_issue_ms);
  if (root["stage_forward_ms"]) c.stage_forward_ms = stage_list(root["stage_forward_ms"], "stage_forward_ms", num_stages);
  if (root["stage_backward_ms"]) c.stage_backward_ms = stage_list(root["stage_backward_ms"], "stage_backward_ms", num_stages);
  if (root["link_sharing"]) {
    const std::string s = yaml::text(kSection, "link_sharing", root["link_sharing"]);
    if (s == "dedicated") c.link_sharing = LinkSharing::DEDICATED;
    else if (s == "fair") c.link_sharing = LinkSharing::FAIR;
    else if (s == "p2p_priority") c.link_sharing = LinkSharing::P2P_PRIORITY;
    else if (s == "reduce_priority") c.link_sharing = LinkSharing::REDUCE_PRIORITY;
    else yaml::fail(kSection, "link_sharing", root["link_sharing"], "dedicated, fair, p2p_priority or reduce_priority");
  }
  return c;
}

double ring_reduce_scatter_ms(int32_t n, double bytes, double alpha_ms, double bw) {
  if (n <= 1) return 0.0;
  return (n - 1) * alpha_ms + static_cast<double>(n - 1) / n * transfer_ms(bytes, bw);
}

double ring_all_gather_ms(int32_t n, double bytes, double alpha_ms, double bw) {
  return ring_reduce_scatter_ms(n, bytes, alpha_ms, bw);
}

double ring_all_reduce_ms(int32_t n, double bytes, double alpha_ms, double bw) {
  return 2.0 * ring_reduce_scatter_ms(n, bytes, alpha_ms, bw);
}

SimCostModel::SimCostModel(const ProgramSet& set, const PipelineConfig& cfg, CostSpec cost, StragglerModel straggler)
    : set_(&set), cost_(std::move(cost)), straggler_(std::move(straggler)) {
  const int32_t S = cfg.num_stages();
  if (static_cast<int32_t>(cfg.stage_layers.size()) != S)
    throw std::invalid_argument(fmt::format("simulate: config has {} stage layer ranges for {} virtual stages",
                                            cfg.stage_layers.size(), S));
  const World& w = set.world;
  for (int32_t s = 0; s < S; ++s) {
    const double layers = cfg.stage_layers[static_cast<size_t>(s)].count();
    const double moe = layers * (cost_.moe_dispatch_ms_per_layer + cost_.moe_combine_ms_per_layer);
    const auto idx = static_cast<size_t>(s);
    fwd_ms_.push_back((cost_.stage_forward_ms.empty() ? layers * cost_.forward_ms_per_layer : cost_.stage_forward_ms[idx]) + moe);
    bwd_ms_.push_back((cost_.stage_backward_ms.empty() ? layers * cost_.backward_ms_per_layer : cost_.stage_backward_ms[idx]) + moe);
    const double grad = layers * cost_.grad_bytes_per_layer;
    const double rs = ring_reduce_scatter_ms(w.shard, grad, cost_.collective_alpha_ms, cost_.shard_bandwidth_gb_per_s);
    const double ar = ring_all_reduce_ms(w.replicate, grad / std::max(1, w.shard), cost_.collective_alpha_ms,
                                         cost_.replicate_bandwidth_gb_per_s);
    reduce_ms_.push_back(rs + ar);
    layers_.push_back(static_cast<int32_t>(layers));
    unshard_ms_.push_back(ring_all_gather_ms(w.shard, layers * cost_.param_bytes_per_layer, cost_.collective_alpha_ms,
                                             cost_.shard_bandwidth_gb_per_s));
    check_stage(s, layers);
  }
  const double xfer = transfer_ms(cost_.activation_bytes, cost_.p2p_bandwidth_gb_per_s);
  check_figure(cost_.p2p_latency_ms + xfer, "a one-op P2P batch's time",
               {{"p2p_latency_ms", cost_.p2p_latency_ms, cost_.p2p_latency_ms},
                {"activation_bytes", cost_.activation_bytes, xfer},
                {"p2p_bandwidth_gb_per_s", cost_.p2p_bandwidth_gb_per_s, xfer}},
               largest_);
  // BATCH times per instruction, read once in program order: the engine asks for them in time
  // order across ranks, where each Instr's op list is a cache miss on a large set.
  durations_ = durations_table(set);
  compute_outside();
}

void SimCostModel::compute_outside() {
  const World& w = set_->world;
  if (w.expanded) return;
  const auto S = static_cast<size_t>(fwd_ms_.size());
  outside_reduce_ms_.assign(static_cast<size_t>(w.pp), std::vector<double>(S, 0.0));
  outside_unshard_ms_ = outside_reduce_ms_;
  for (int32_t r = 0; r < w.pp; ++r)
    for (const Stage st : local_stages(r, w)) {
      const int32_t s = st.v;
      outside_reduce_ms_[static_cast<size_t>(r)][static_cast<size_t>(s)] =
          straggler_.slowest_outside_ms(r, CollectiveKind::REDUCE_GRAD, Stage{s});
      outside_unshard_ms_[static_cast<size_t>(r)][static_cast<size_t>(s)] =
          straggler_.slowest_outside_ms(r, CollectiveKind::UNSHARD, Stage{s});
    }
}

SimCostModel SimCostModel::with_straggler(StragglerModel straggler) const {
  SimCostModel m = *this;
  m.straggler_ = std::move(straggler);
  m.extra_ms_.clear();
  m.compute_outside();
  return m;
}

void SimCostModel::check_stage(int32_t s, double layers) {
  const auto idx = static_cast<size_t>(s);
  const World& w = set_->world;
  const double moe = layers * (cost_.moe_dispatch_ms_per_layer + cost_.moe_combine_ms_per_layer);
  const std::vector<Term> moe_terms = {{"moe_dispatch_ms_per_layer", cost_.moe_dispatch_ms_per_layer, moe},
                                       {"moe_combine_ms_per_layer", cost_.moe_combine_ms_per_layer, moe}};
  auto compute_terms = [&](const char* per_layer, double v, const char* list, const std::vector<double>& l) {
    std::vector<Term> t = moe_terms;
    if (l.empty()) t.push_back({per_layer, v, layers * v});
    else t.push_back({list, l[idx], l[idx]});
    return t;
  };
  check_figure(fwd_ms_[idx], fmt::format("the forward time of stage s{}", s),
               compute_terms("forward_ms_per_layer", cost_.forward_ms_per_layer, "stage_forward_ms", cost_.stage_forward_ms),
               largest_);
  check_figure(bwd_ms_[idx], fmt::format("the backward time of stage s{}", s),
               compute_terms("backward_ms_per_layer", cost_.backward_ms_per_layer, "stage_backward_ms", cost_.stage_backward_ms),
               largest_);
  std::vector<Term> red = ring_terms(w.shard, 1, layers, "grad_bytes_per_layer", cost_.grad_bytes_per_layer, 1,
                                     "shard_bandwidth_gb_per_s", cost_.shard_bandwidth_gb_per_s, cost_.collective_alpha_ms);
  for (const Term& t : ring_terms(w.replicate, 2, layers, "grad_bytes_per_layer", cost_.grad_bytes_per_layer,
                                  std::max(1, w.shard), "replicate_bandwidth_gb_per_s", cost_.replicate_bandwidth_gb_per_s,
                                  cost_.collective_alpha_ms))
    red.push_back(t);
  check_figure(reduce_ms_[idx], fmt::format("REDUCE_GRAD s{}'s time (ring reduce-scatter + all-reduce)", s), red,
               largest_);
  check_figure(unshard_ms_[idx], fmt::format("UNSHARD s{}'s time (ring all-gather)", s),
               ring_terms(w.shard, 1, layers, "param_bytes_per_layer", cost_.param_bytes_per_layer, 1,
                          "shard_bandwidth_gb_per_s", cost_.shard_bandwidth_gb_per_s, cost_.collective_alpha_ms),
               largest_);
}

int32_t SimCostModel::global_rank(const Program& p) const {
  return set_->world.expanded ? p.rank.v : p.pp_rank * set_->world.dp();
}

double SimCostModel::extra(const Program& p, const Instr& i) const {
  const double* e = row_of(extra_ms_, p, i);
  return e ? *e : 0.0;
}

double SimCostModel::share(const Instr& i) const {
  return i.bucket.whole() ? 1.0 : bucket_share(i.bucket, layers_.at(static_cast<size_t>(i.stage.v)));
}

std::shared_ptr<const SimCostModel::Durations> SimCostModel::durations_table(const ProgramSet& set) const {
  auto d = std::make_shared<Durations>();
  d->base.assign(set.programs.size() + 1, 0);
  for (size_t p = 0; p < set.programs.size(); ++p) d->base[p + 1] = d->base[p] + set.programs[p].instrs.size();
  d->code.assign(d->base.back(), 0);
  d->ms.push_back(0.0);
  d->batch.push_back(0);
  std::map<std::pair<char, uint64_t>, uint16_t> codes;  // (batch, bits of ms) → code; a few hundred
  for (size_t p = 0; p < set.programs.size(); ++p) {
    const auto& instrs = set.programs[p].instrs;
    for (size_t k = 0; k < instrs.size(); ++k) {
      const bool batch = instrs[k].op == OpKind::BATCH;
      const double ms = batch ? base_batch_ms(instrs[k]) : compute_formula_ms(instrs[k]);
      if (!batch && std::bit_cast<uint64_t>(ms) == 0) continue;  // +0.0: code 0
      const auto [it, fresh] = codes.try_emplace({batch ? 1 : 0, std::bit_cast<uint64_t>(ms)}, static_cast<uint16_t>(d->ms.size()));
      if (fresh) {
        if (d->ms.size() > UINT16_MAX) return nullptr;
        d->ms.push_back(ms);
        d->batch.push_back(batch ? 1 : 0);
      }
      d->code[d->base[p] + k] = it->second;
    }
  }
  return d;
}

size_t SimCostModel::flat_index(const Program& p, const Instr& i) const {
  if (!durations_) return SIZE_MAX;
  const auto& progs = set_->programs;
  if (&p < progs.data() || &p >= progs.data() + progs.size()) return SIZE_MAX;
  if (&i < p.instrs.data() || &i >= p.instrs.data() + p.instrs.size()) return SIZE_MAX;
  return durations_->base[static_cast<size_t>(&p - progs.data())] + static_cast<size_t>(&i - p.instrs.data());
}

double SimCostModel::compute_ms(const Program& p, const Instr& i) const {
  const size_t k = flat_index(p, i);
  if (k == SIZE_MAX) return compute_formula_ms(i);
  const uint16_t c = durations_->code[k];
  return durations_->batch[c] ? 0.0 : durations_->ms[c];
}

double SimCostModel::compute_formula_ms(const Instr& i) const {
  switch (i.op) {
    case OpKind::F: return fwd_ms_.at(static_cast<size_t>(i.stage.v));
    case OpKind::B: return share(i) * bwd_ms_.at(static_cast<size_t>(i.stage.v));
    case OpKind::I: return cost_.backward_input_fraction * bwd_ms_.at(static_cast<size_t>(i.stage.v));
    case OpKind::W: return share(i) * (1.0 - cost_.backward_input_fraction) * bwd_ms_.at(static_cast<size_t>(i.stage.v));
    case OpKind::OPT_STEP: return cost_.optimizer_ms;
    default: return 0.0;
  }
}

double SimCostModel::base_batch_ms(const Instr& i) const {
  int32_t sends = 0, recvs = 0;
  for (const P2POp& op : i.p2p) (is_send(op.kind) ? sends : recvs) += 1;
  // Both directions of a link run at once; ops in one direction share it.
  return cost_.p2p_latency_ms + transfer_ms(std::max(sends, recvs) * cost_.activation_bytes, cost_.p2p_bandwidth_gb_per_s);
}

const double* SimCostModel::row_of(const std::vector<std::vector<double>>& table, const Program& p, const Instr& i) const {
  if (table.empty()) return nullptr;
  const auto& progs = set_->programs;
  if (&p < progs.data() || &p >= progs.data() + progs.size()) return nullptr;
  const auto& row = table[static_cast<size_t>(&p - progs.data())];
  if (&i < p.instrs.data() || &i >= p.instrs.data() + p.instrs.size() || row.empty()) return nullptr;
  return &row[static_cast<size_t>(&i - p.instrs.data())];
}

double SimCostModel::batch_ms(const Program& p, const Instr& i) const {
  const size_t k = flat_index(p, i);
  double ms = 0.0;
  if (k == SIZE_MAX) ms = base_batch_ms(i);
  else if (const uint16_t c = durations_->code[k]; durations_->batch[c]) ms = durations_->ms[c];
  // else: a non-BATCH instruction of the set, 0 (as the per-BATCH table this replaces said)
  return ms + extra(p, i);
}

double SimCostModel::base_collective_ms(const Instr& i) const {
  const auto s = static_cast<size_t>(i.stage.v);
  if (i.op == OpKind::REDUCE_GRAD && !i.bucket.whole()) {
    // A bucket: the same two rings over its share of the stage's gradient bytes.
    const World& w = set_->world;
    const double grad = bucket_layers(i.bucket, layers_.at(s)).size() * cost_.grad_bytes_per_layer;
    return ring_reduce_scatter_ms(w.shard, grad, cost_.collective_alpha_ms, cost_.shard_bandwidth_gb_per_s) +
           ring_all_reduce_ms(w.replicate, grad / std::max(1, w.shard), cost_.collective_alpha_ms,
                              cost_.replicate_bandwidth_gb_per_s);
  }
  return i.op == OpKind::UNSHARD ? unshard_ms_.at(s) : i.op == OpKind::REDUCE_GRAD ? reduce_ms_.at(s) : 0.0;
}

double SimCostModel::collective_ms(const Program& p, const Instr& i) const { return base_collective_ms(i) + extra(p, i); }

double SimCostModel::arrival_delay_ms(const Program& p, const Instr& i) const {
  if (i.op != OpKind::UNSHARD && i.op != OpKind::REDUCE_GRAD) return 0.0;
  if (i.bucket.index > 0) return 0.0;  // a stage's reduction draws one delay: its first bucket's
  const auto kind = i.op == OpKind::UNSHARD ? CollectiveKind::UNSHARD : CollectiveKind::REDUCE_GRAD;
  return straggler_.delay_ms(global_rank(p), kind, i.stage);
}

double SimCostModel::external_arrival_ms(const Program& p, const Instr& i) const {
  if (set_->world.expanded) return 0.0;
  const auto r = static_cast<size_t>(p.pp_rank);
  const auto s = static_cast<size_t>(i.stage.v);
  if (i.op == OpKind::REDUCE_GRAD) return i.bucket.index > 0 ? 0.0 : outside_reduce_ms_.at(r).at(s);
  if (i.op == OpKind::UNSHARD) return outside_unshard_ms_.at(r).at(s);
  return 0.0;
}

}  // namespace ppstream::sim
