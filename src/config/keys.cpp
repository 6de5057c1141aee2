// The core keys: one table row per key with its reader. YAML and CLI overrides both go through
// apply_key, so a key has exactly one spelling, one type and one error wording.
#include <charconv>
#include <functional>
#include <set>

#include "config_internal.h"

namespace ppstream::config_detail {
namespace {

struct Ctx {
  const std::string& key;
  const std::string& where;
  Locator& loc;
  bool from_cli;
};

[[noreturn]] void type_error(const Ctx& c, const YAML::Node& v, const std::string& expected) {
  if (v.IsScalar()) fail(c.where, c.key + "=" + v.Scalar() + ": expected " + expected);
  fail(c.where, c.key + ": expected " + expected + ", got " + shown(v));
}

int32_t read_int(const Ctx& c, const YAML::Node& v) {
  if (!v.IsScalar()) type_error(c, v, "an integer");
  const std::string& s = v.Scalar();
  int32_t out = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  if (ec == std::errc::result_out_of_range) type_error(c, v, "an integer that fits in 32 bits");
  if (s.empty() || ec != std::errc{} || p != end) type_error(c, v, "an integer");
  return out;
}

bool read_bool(const Ctx& c, const YAML::Node& v) {
  bool out = false;
  if (!v.IsScalar() || !YAML::convert<bool>::decode(v, out)) type_error(c, v, "true or false");
  return out;
}

// One of `names` (exact spelling), with a did-you-mean among them.
template <typename E>
E read_enum(const Ctx& c, const YAML::Node& v, const std::vector<std::pair<std::string, E>>& names) {
  std::string list;
  std::vector<std::string> spellings;
  for (const auto& [n, e] : names) {
    if (v.IsScalar() && v.Scalar() == n) return e;
    list += (list.empty() ? "" : ", ") + n;
    spellings.push_back(n);
  }
  std::string hint;
  if (v.IsScalar())
    if (auto near = closest(v.Scalar(), spellings); !near.empty()) hint = " (did you mean " + near + "?)";
  type_error(c, v, "one of " + list + hint);
}

template <typename E, size_t N>
std::vector<std::pair<std::string, E>> spellings_of(const E (&values)[N]) {
  std::vector<std::pair<std::string, E>> out;
  for (E e : values) out.emplace_back(to_string(e), e);
  return out;
}

void read_layer_strings(PipelineConfig& cfg, const Ctx& c, const YAML::Node& v) {
  std::vector<std::string> strings;
  if (c.from_cli && v.IsNull()) {
    // "" on the command line: drop the layer strings, use the even split of num_layers.
  } else if (c.from_cli && v.IsScalar()) {
    const std::string& s = v.Scalar();
    size_t start = 0;
    while (true) {
      const size_t semi = s.find(';', start);
      strings.push_back(s.substr(start, semi == std::string::npos ? std::string::npos : semi - start));
      if (semi == std::string::npos) break;
      start = semi + 1;
    }
  } else if (v.IsSequence()) {
    for (size_t r = 0; r < v.size(); ++r) {
      const YAML::Node& item = v[r];
      const std::string item_key = layer_string_key(r);
      const std::string item_where = c.loc.at(item).empty() ? c.where : c.loc.at(item);
      if (!item.IsScalar())
        fail(item_where, item_key + ": expected a string of layer ranges like \"0-5,24-29\", got " + shown(item));
      c.loc.remember(item_key, item_where);
      strings.push_back(item.Scalar());
    }
  } else {
    type_error(c, v, "a list of strings, one per PP rank, e.g. [\"0-5,24-29\", \"6-11,30-35\"]");
  }
  cfg.layers_per_stage = std::move(strings);
}

using Setter = std::function<void(PipelineConfig&, const Ctx&, const YAML::Node&)>;

const std::vector<std::pair<std::string, Setter>>& key_table() {
  static const ScheduleKind kSchedules[] = {ScheduleKind::GPIPE, ScheduleKind::ONE_F_ONE_B,
                                            ScheduleKind::INTERLEAVED_1F1B, ScheduleKind::ZB_H1,
                                            ScheduleKind::INTERLEAVED_ZB, ScheduleKind::ZBV,
                                            ScheduleKind::DUALPIPEV};
  static const P2PTransport kTransports[] = {P2PTransport::PLAIN, P2PTransport::BATCH,
                                             P2PTransport::MULTI_STREAM};
  static const DPMode kModes[] = {DPMode::NONE, DPMode::FSDP, DPMode::HSDP};
  static const std::vector<std::pair<std::string, ReducePolicy>> kReduce = {
      {"inline", ReducePolicy::INLINE}, {"async", ReducePolicy::ASYNC}};
  static const std::vector<std::pair<std::string, ReduceOrder>> kOrder = {
      {"program", ReduceOrder::PROGRAM}, {"priority", ReduceOrder::PRIORITY}};
  static const std::vector<std::pair<std::string, Setter>> table = {
      {"pipeline_parallel_size",
       [](auto& cfg, auto& c, auto& v) { cfg.pipeline_parallel_size = read_int(c, v); }},
      {"pipeline_parallel_interleave_num",
       [](auto& cfg, auto& c, auto& v) { cfg.pipeline_parallel_interleave_num = read_int(c, v); }},
      {kLayersKey, [](auto& cfg, auto& c, auto& v) { read_layer_strings(cfg, c, v); }},
      {"num_layers", [](auto& cfg, auto& c, auto& v) { cfg.num_layers = read_int(c, v); }},
      {"micro_batch_num", [](auto& cfg, auto& c, auto& v) { cfg.micro_batch_num = read_int(c, v); }},
      {"pipeline_parallel_overlap_p2p",
       [](auto& cfg, auto& c, auto& v) { cfg.pipeline_parallel_overlap_p2p = read_bool(c, v); }},
      {"pipeline_parallel_overlap_b_f",
       [](auto& cfg, auto& c, auto& v) { cfg.pipeline_parallel_overlap_b_f = read_bool(c, v); }},
      {"pipeline_parallel_p2p_transport",
       [](auto& cfg, auto& c, auto& v) {
         cfg.pipeline_parallel_p2p_transport = read_enum(c, v, spellings_of(kTransports));
       }},
      {"schedule", [](auto& cfg, auto& c, auto& v) { cfg.schedule = read_enum(c, v, spellings_of(kSchedules)); }},
      {"data_parallel.mode", [](auto& cfg, auto& c, auto& v) { cfg.mode = read_enum(c, v, spellings_of(kModes)); }},
      {"data_parallel.shard_size", [](auto& cfg, auto& c, auto& v) { cfg.shard_size = read_int(c, v); }},
      {"data_parallel.replicate_size", [](auto& cfg, auto& c, auto& v) { cfg.replicate_size = read_int(c, v); }},
      {"data_parallel.reshard_after_backward",
       [](auto& cfg, auto& c, auto& v) { cfg.reshard_after_backward = read_bool(c, v); }},
      {"data_parallel.max_active_stages",
       [](auto& cfg, auto& c, auto& v) { cfg.max_active_stages = read_int(c, v); }},
      {"data_parallel.reduce_grad", [](auto& cfg, auto& c, auto& v) { cfg.reduce_grad = read_enum(c, v, kReduce); }},
      {"data_parallel.sync_last_reduce",
       [](auto& cfg, auto& c, auto& v) { cfg.sync_last_reduce = read_bool(c, v); }},
      {"data_parallel.reduce_order", [](auto& cfg, auto& c, auto& v) { cfg.reduce_order = read_enum(c, v, kOrder); }},
      {"data_parallel.reduce_buckets", [](auto& cfg, auto& c, auto& v) { cfg.reduce_buckets = read_int(c, v); }},
  };
  return table;
}

constexpr const char* kDpPrefix = "data_parallel.";

[[noreturn]] void unknown_key(const std::string& key, const std::string& where) {
  const bool dotted = key.rfind(kDpPrefix, 0) == 0;
  std::vector<std::string> candidates;
  for (const auto& k : core_keys())
    if ((k.rfind(kDpPrefix, 0) == 0) == dotted) candidates.push_back(k);
  if (!dotted) {
    candidates.push_back("data_parallel");
    for (const auto& s : extra_section_names()) candidates.push_back(s);
    // A data-parallel key written at the top level: say where it belongs.
    const std::string nested = kDpPrefix + key;
    for (const auto& k : core_keys())
      if (k == nested)
        fail(where, "unknown top-level key " + key + "; data-parallel keys go under data_parallel: (" +
                        nested + ")");
  }
  if (auto near = closest(key, candidates); !near.empty())
    fail(where, "unknown key " + key + "; did you mean " + near + "?");
  std::string list;
  for (const auto& k : candidates) list += (list.empty() ? "" : ", ") + k;
  fail(where, "unknown key " + key + "; known keys: " + list);
}

}  // namespace

const std::vector<std::string>& core_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const auto& [k, setter] : key_table()) out.push_back(k);
    return out;
  }();
  return keys;
}

void reject_duplicate_keys(const YAML::Node& map, const std::string& prefix, const Locator& loc) {
  std::set<std::string> seen;
  for (const auto& kv : map) {
    const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : shown(kv.first);
    if (!seen.insert(k).second)
      fail(loc.at(kv.first), "duplicate key " + prefix + k + "; give each key once");
  }
}

void apply_key(PipelineConfig& cfg, const std::string& key, const YAML::Node& value,
               const std::string& where, Locator& loc, bool from_cli) {
  if (key == "data_parallel") {
    if (!value.IsMap())
      fail(where, "data_parallel: expected a mapping like {mode: hsdp, shard_size: 8, replicate_size: 32}, got " +
                      shown(value));
    reject_duplicate_keys(value, kDpPrefix, loc);
    loc.remember(key, where);
    for (const auto& kv : value) {
      const std::string sub = kDpPrefix + (kv.first.IsScalar() ? kv.first.Scalar() : shown(kv.first));
      const std::string sub_where = loc.at(kv.first).empty() ? where : loc.at(kv.first);
      apply_key(cfg, sub, kv.second, sub_where, loc, from_cli);
    }
    return;
  }
  for (const auto& [name, setter] : key_table()) {
    if (name != key) continue;
    setter(cfg, Ctx{key, where, loc, from_cli}, value);
    cfg.given_keys.insert(key);
    loc.remember(key, where);
    return;
  }
  unknown_key(key, where);
}

}  // namespace ppstream::config_detail
