#include "ppstream/sim/straggler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "yaml_util.h"

namespace ppstream::sim {
namespace {

const char* kSection = "straggler";

// SplitMix64 finalizer (Steele, Lea, Flood: "Fast splittable pseudorandom number generators",
// OOPSLA 2014): a counter-based hash, so each draw depends only on its key.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in (0, 1), never 0 (so logarithms stay finite).
double uniform(uint64_t key) { return (static_cast<double>(mix(key) >> 11) + 0.5) * 0x1.0p-53; }

std::vector<CollectiveKind> parse_kinds(const std::string& key, const YAML::Node& node) {
  if (!node.IsSequence()) yaml::fail(kSection, key, node, "a list of reduce_grad / unshard");
  std::vector<CollectiveKind> out;
  for (const auto& item : node) {
    const std::string s = item.IsScalar() ? item.Scalar() : "";
    if (s == "reduce_grad") out.push_back(CollectiveKind::REDUCE_GRAD);
    else if (s == "unshard") out.push_back(CollectiveKind::UNSHARD);
    else yaml::fail(kSection, key, item, "reduce_grad or unshard");
  }
  return out;
}

bool applies(const std::vector<CollectiveKind>& kinds, CollectiveKind k) {
  return kinds.empty() || std::find(kinds.begin(), kinds.end(), k) != kinds.end();
}

// What a tail may name: ranks below pp * dp, PP ranks below pp, stages below `stages`
// (0 where the caller gave no world: only the int32 range is checked).
struct Limits {
  int32_t dp = 1;
  int64_t pp = 0;
  int64_t stages = 0;
};

// A member or stage id: an int32 within the world when it is known (a typo must not be ignored).
int32_t id_below(const std::string& key, const YAML::Node& node, int64_t limit, const std::string& what) {
  const int64_t v = yaml::integer(kSection, key, node, 0);
  const int64_t max = limit > 0 ? limit : int64_t{std::numeric_limits<int32_t>::max()} + 1;
  if (v >= max) yaml::fail(kSection, key, node, limit > 0 ? fmt::format("{} below {}", what, limit) : what + " that fits in int32");
  return static_cast<int32_t>(v);
}

StragglerTail parse_tail(const YAML::Node& node, size_t n, const Limits& lim) {
  const int32_t dp = lim.dp;
  const std::string key = fmt::format("tails[{}]", n);
  if (!node.IsMap()) yaml::fail(kSection, key, node, "a mapping with ranks or pp_rank/dp_index, and delay_ms");
  yaml::check_keys(kSection + std::string(".") + key, node, {"ranks", "pp_rank", "dp_index", "delay_ms", "collectives", "stages"});
  StragglerTail t;
  if (node["ranks"]) {
    if (!node["ranks"].IsSequence()) yaml::fail(kSection, key + ".ranks", node["ranks"], "a list of global ranks");
    for (const auto& r : node["ranks"])
      t.ranks.push_back(id_below(key + ".ranks", r, lim.pp * dp, lim.pp > 0 ? fmt::format("a global rank (pp {} x dp {})", lim.pp, dp) : "a global rank"));
  }
  if (node["pp_rank"] || node["dp_index"]) {
    if (!node["pp_rank"] || !node["dp_index"])
      yaml::fail(kSection, key, node, "pp_rank and dp_index together (or ranks: [global ranks])");
    const int64_t pp = id_below(key + ".pp_rank", node["pp_rank"], lim.pp, "a PP rank");
    const auto d = yaml::integer(kSection, key + ".dp_index", node["dp_index"], 0);
    if (d >= dp) yaml::fail(kSection, key + ".dp_index", node["dp_index"], fmt::format("a DP index below dp = {}", dp));
    if (pp * dp + d > std::numeric_limits<int32_t>::max())
      yaml::fail(kSection, key + ".pp_rank", node["pp_rank"], "a PP rank whose global rank fits in int32");
    t.ranks.push_back(static_cast<int32_t>(pp * dp + d));
  }
  if (t.ranks.empty()) yaml::fail(kSection, key, node, "ranks: [...] or pp_rank + dp_index naming the late member");
  if (!node["delay_ms"]) yaml::fail(kSection, key + ".delay_ms", node["delay_ms"], "the member's delay in ms");
  t.delay_ms = yaml::number(kSection, key + ".delay_ms", node["delay_ms"], 0.0);
  if (node["collectives"]) t.collectives = parse_kinds(key + ".collectives", node["collectives"]);
  if (node["stages"]) {
    if (!node["stages"].IsSequence()) yaml::fail(kSection, key + ".stages", node["stages"], "a list of stage ids");
    for (const auto& s : node["stages"]) t.stages.push_back(id_below(key + ".stages", s, lim.stages, "a virtual stage id"));
  }
  return t;
}

}  // namespace

const char* to_string(CollectiveKind k) { return k == CollectiveKind::REDUCE_GRAD ? "reduce_grad" : "unshard"; }

namespace {

StragglerSpec parse_spec(const std::string& yaml_text, const Limits& lim) {
  const YAML::Node root = yaml::load_section(kSection, yaml_text);
  yaml::check_keys(kSection, root, {"seed", "tails", "distribution"});
  StragglerSpec spec;
  if (root["seed"]) spec.seed = static_cast<uint64_t>(yaml::integer(kSection, "seed", root["seed"], 0, kSeedRange));
  if (root["tails"]) {
    if (!root["tails"].IsSequence()) yaml::fail(kSection, "tails", root["tails"], "a list of tails");
    size_t n = 0;
    for (const auto& t : root["tails"]) spec.tails.push_back(parse_tail(t, n++, lim));
  }
  if (const YAML::Node d = root["distribution"]) {
    if (!d.IsMap()) yaml::fail(kSection, "distribution", d, "a mapping with kind, median_ms, sigma");
    yaml::check_keys("straggler.distribution", d, {"kind", "median_ms", "sigma", "collectives"});
    const std::string kind = d["kind"] ? yaml::text(kSection, "distribution.kind", d["kind"]) : "lognormal";
    if (kind == "lognormal") spec.distribution = DelayDistribution::LOGNORMAL;
    else if (kind == "exponential") spec.distribution = DelayDistribution::EXPONENTIAL;
    else if (kind == "none") spec.distribution = DelayDistribution::NONE;
    else yaml::fail(kSection, "distribution.kind", d["kind"], "lognormal, exponential or none");
    if (spec.distribution != DelayDistribution::NONE) {
      if (!d["median_ms"]) yaml::fail(kSection, "distribution.median_ms", d["median_ms"], "the median delay in ms");
      spec.median_ms = yaml::number(kSection, "distribution.median_ms", d["median_ms"], 0.0);
    }
    if (d["sigma"]) spec.sigma = yaml::number(kSection, "distribution.sigma", d["sigma"], 0.0);
    if (d["collectives"]) spec.distribution_collectives = parse_kinds("distribution.collectives", d["collectives"]);
  }
  return spec;
}

}  // namespace

StragglerSpec parse_straggler_spec(const std::string& yaml_text, int32_t dp) { return parse_spec(yaml_text, Limits{dp, 0, 0}); }

StragglerSpec parse_straggler_spec(const std::string& yaml_text, const World& world, int32_t num_stages) {
  return parse_spec(yaml_text, Limits{world.dp(), world.pp, num_stages});
}

StragglerModel::StragglerModel(StragglerSpec spec, World world, uint64_t trial)
    : spec_(std::move(spec)), world_(world), trial_(trial) {}

double StragglerModel::delay_ms(int32_t global_rank, CollectiveKind kind, Stage stage) const {
  double d = 0.0;
  for (const StragglerTail& t : spec_.tails) {
    if (!applies(t.collectives, kind)) continue;
    if (!t.stages.empty() && std::find(t.stages.begin(), t.stages.end(), stage.v) == t.stages.end()) continue;
    if (std::find(t.ranks.begin(), t.ranks.end(), global_rank) != t.ranks.end()) d += t.delay_ms;
  }
  if (spec_.distribution == DelayDistribution::NONE || !applies(spec_.distribution_collectives, kind)) return d;
  uint64_t key = mix(spec_.seed ^ mix(trial_ + 1));
  key = mix(key ^ static_cast<uint64_t>(static_cast<uint32_t>(global_rank)));
  key = mix(key ^ (static_cast<uint64_t>(kind) << 32) ^ static_cast<uint64_t>(static_cast<uint32_t>(stage.v)));
  if (spec_.distribution == DelayDistribution::EXPONENTIAL) {
    // Median of Exp(mean) is mean * ln 2.
    return d - spec_.median_ms / std::numbers::ln2 * std::log(uniform(key));
  }
  // Box–Muller: a standard normal from two uniforms; lognormal = median * exp(sigma * z).
  const double z = std::sqrt(-2.0 * std::log(uniform(key))) * std::cos(2.0 * std::numbers::pi * uniform(key ^ 0x5bd1e995ULL));
  return d + spec_.median_ms * std::exp(spec_.sigma * z);
}

double StragglerModel::slowest_outside_ms(int32_t pp_rank, CollectiveKind kind, Stage stage) const {
  const int32_t dp = world_.dp();
  const int32_t members = kind == CollectiveKind::UNSHARD ? world_.shard : dp;
  double worst = 0.0;
  for (int32_t d = 1; d < members; ++d) worst = std::max(worst, delay_ms(pp_rank * dp + d, kind, stage));
  return worst;
}

}  // namespace ppstream::sim
