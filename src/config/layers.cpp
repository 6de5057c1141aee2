// Layer ranges: parsing "0-5,24-29" strings, placing them on global virtual stages, the even
// split of num_layers, and the check that the stages tile the layers in forward order.
#include <algorithm>
#include <charconv>
#include <numeric>

#include "config_internal.h"

namespace ppstream::config_detail {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// A non-negative decimal integer that fills the whole text.
std::optional<int32_t> parse_layer_number(const std::string& s) {
  int32_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || s[0] == '-' || s[0] == '+' || ec != std::errc{} || p != end) return std::nullopt;
  return v;
}

std::string range_text(const LayerRange& r) {
  return r.first == r.last ? std::to_string(r.first)
                           : std::to_string(r.first) + "-" + std::to_string(r.last);
}

// "layer 6 is" / "layers 6-7 are".
std::string layers_are(const LayerRange& r) {
  return r.first == r.last ? "layer " + range_text(r) + " is" : "layers " + range_text(r) + " are";
}

}  // namespace

std::vector<LayerRange> parse_layer_string_at(const std::string& text, const std::string& key,
                                              const std::string& where) {
  const std::string ctx = key + "=\"" + text + "\": ";
  const std::string expected = "expected comma-separated layer ranges \"a-b\" or \"a\" (one per "
                               "virtual chunk, non-negative integers), e.g. \"0-5,24-29\"";
  if (trim(text).empty()) fail(where, ctx + "empty layer string; " + expected);
  std::vector<LayerRange> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string part =
        trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (part.empty()) fail(where, ctx + "empty range between commas; " + expected);
    const size_t dash = part.find('-', 1);  // from 1: a leading '-' is a sign, not a separator
    std::optional<int32_t> first, last;
    if (dash == std::string::npos) {
      first = last = parse_layer_number(part);
    } else {
      first = parse_layer_number(trim(part.substr(0, dash)));
      last = parse_layer_number(trim(part.substr(dash + 1)));
    }
    if (!first || !last) fail(where, ctx + "\"" + part + "\" is not a layer range; " + expected);
    if (*last >= kMaxLayers)
      fail(where, ctx + "layer " + std::to_string(*last) + " in \"" + part + "\" is beyond the limit of " +
                      std::to_string(kMaxLayers) + " layers");
    if (*first > *last)
      fail(where, ctx + "range \"" + part + "\" has first layer " + std::to_string(*first) +
                      " > last layer " + std::to_string(*last) + "; write it as \"" +
                      std::to_string(*last) + "-" + std::to_string(*first) + "\"");
    out.push_back(LayerRange{*first, *last});
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<LayerRange> stage_layers_from_strings(const std::vector<std::string>& strings, int32_t pp,
                                                  int32_t vpp, Placement placement, const Locator& loc) {
  if (strings.size() != static_cast<size_t>(pp))
    fail(loc.of(kLayersKey),
         std::string(kLayersKey) + " has " + std::to_string(strings.size()) +
             " strings but pipeline_parallel_size=" + std::to_string(pp) +
             "; give one string per PP rank");
  std::vector<LayerRange> stages(static_cast<size_t>(pp) * static_cast<size_t>(vpp));
  for (size_t r = 0; r < strings.size(); ++r) {
    const std::string key = layer_string_key(r);
    const std::string where = loc.of(key, {kLayersKey});
    const auto ranges = parse_layer_string_at(strings[r], key, where);
    if (ranges.size() != static_cast<size_t>(vpp))
      fail(where, key + "=\"" + strings[r] + "\": " + std::to_string(ranges.size()) +
                      (ranges.size() == 1 ? " range" : " ranges") +
                      " but pipeline_parallel_interleave_num=" + std::to_string(vpp) +
                      "; give one range per virtual chunk, comma-separated, in stage order (rank r's i-th range is " +
                      (placement == Placement::V ? std::string("stage r, then stage 2*pipeline_parallel_size-1-r, for V schedules)")
                                                 : std::string("stage i*pipeline_parallel_size + r)")));
    for (size_t i = 0; i < ranges.size(); ++i)
      stages[static_cast<size_t>(stage_of_chunk(static_cast<int32_t>(r), static_cast<int32_t>(i), pp, placement).v)] = ranges[i];
  }
  return stages;
}

std::vector<LayerRange> even_split(int32_t num_layers, int32_t stages) {
  std::vector<LayerRange> out;
  const int32_t base = num_layers / stages, extra = num_layers % stages;
  int32_t next = 0;
  for (int32_t s = 0; s < stages; ++s) {
    const int32_t n = base + (s < extra ? 1 : 0);
    out.push_back(LayerRange{next, next + n - 1});
    next += n;
  }
  return out;
}

void check_tiling(const PipelineConfig& cfg, const Locator& loc, int32_t num_layers) {
  const auto& st = cfg.stage_layers;
  const int32_t pp = cfg.pipeline_parallel_size;
  const Placement pl = cfg.placement();
  const auto rank_of = [&](size_t s) { return static_cast<size_t>(pp_rank_of_stage(Stage{static_cast<int32_t>(s)}, pp, pl)); };
  const bool from_strings = !cfg.layers_per_stage.empty();
  // Messages name the layer string of the stage's PP rank when there is one.
  auto where_of = [&](size_t s) {
    return from_strings ? loc.of(layer_string_key(rank_of(s)), {kLayersKey})
                        : loc.of("num_layers");
  };
  auto ctx_of = [&](size_t s) {
    const size_t r = rank_of(s);
    if (from_strings && r < cfg.layers_per_stage.size())
      return layer_string_key(r) + "=\"" + cfg.layers_per_stage[r] + "\": ";
    return std::string("stage_layers: ");
  };
  auto stage_desc = [&](size_t s) {
    return "stage " + std::to_string(s) + " (rank " + std::to_string(rank_of(s)) +
           " chunk " + std::to_string(s / static_cast<size_t>(pp)) + ", layers " +
           range_text(st[s]) + ")";
  };
  const std::string rule = "; every layer 0.." + std::to_string(num_layers - 1) +
                           " must be in exactly one stage";

  for (size_t s = 0; s < st.size(); ++s)
    if (st[s].first < 0 || st[s].last < st[s].first)
      fail(where_of(s), ctx_of(s) + stage_desc(s) + " is not a valid range (need 0 <= first <= last)");

  std::vector<size_t> order(st.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return st[a] < st[b]; });
  if (st[order.front()].first > 0) {
    const size_t s = order.front();
    fail(where_of(s), ctx_of(s) + layers_are({0, st[s].first - 1}) + " in no stage" + rule);
  }
  for (size_t i = 1; i < order.size(); ++i) {
    const size_t a = order[i - 1], b = order[i];
    if (st[b].first <= st[a].last)
      fail(where_of(b), ctx_of(b) + "layer " + std::to_string(st[b].first) + " is in both " +
                            stage_desc(a) + " and " + stage_desc(b) + rule);
    if (st[b].first > st[a].last + 1)
      fail(where_of(b), ctx_of(b) + layers_are({st[a].last + 1, st[b].first - 1}) +
                            " in no stage (between " + stage_desc(a) + " and " + stage_desc(b) +
                            ")" + rule);
  }
  const size_t top = order.back();
  if (st[top].last >= num_layers)
    fail(where_of(top), ctx_of(top) + stage_desc(top) + " goes past the last layer " +
                            std::to_string(num_layers - 1) + " of num_layers=" + std::to_string(num_layers));
  if (st[top].last < num_layers - 1)
    fail(where_of(top), ctx_of(top) + layers_are({st[top].last + 1, num_layers - 1}) +
                            " in no stage (num_layers=" + std::to_string(num_layers) + ")" + rule);
  // Forward runs stage s -> s+1, so stage 0 holds layer 0 and stage s+1 the layers right after s's.
  if (st[0].first != 0)
    fail(where_of(0), ctx_of(0) + stage_desc(0) + " must start at layer 0: forward enters the model "
                                                 "at stage 0, so stages hold consecutive layers in stage order");
  for (size_t s = 1; s < st.size(); ++s)
    if (st[s].first != st[s - 1].last + 1)
      fail(where_of(s), ctx_of(s) + stage_desc(s) + " must start at layer " +
                            std::to_string(st[s - 1].last + 1) + ", right after " + stage_desc(s - 1) +
                            ": forward runs stage " + std::to_string(s - 1) + " -> " +
                            std::to_string(s) + ", so stages hold consecutive layers in stage order");
}

}  // namespace ppstream::config_detail

namespace ppstream {
std::vector<LayerRange> parse_layer_string(const std::string& text, const std::string& key) {
  return config_detail::parse_layer_string_at(text, key, "");
}
}  // namespace ppstream
