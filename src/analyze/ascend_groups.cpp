// Communication groups of Ascend profiles: profiler_metadata.json's rank lists, the mapping of
// communication_matrix.json's group-local link ranks to global ranks, and the join of P2P links
// with the HCCL lane ops on the rank's timeline (peers for Level0 profiles, which have no Plane lanes).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <climits>

#include "json_file.h"
#include "ppstream/analyze/readers.h"

namespace ppstream::analyze {
namespace {

// msprof-analyze's double_hash (cluster_analyse/common_func/utils.py): two 32-bit polynomial
// hashes (primes 29 and 131) of the group id's characters, high and low word. It is how
// communication_matrix.json's "op@group" names the group. (Characters as bytes: equal to the
// Python version for ASCII ids, which HCCL's are.)
std::string double_hash(std::string_view id) {
  uint32_t h0 = 0, h1 = 0;
  for (unsigned char c : id) {
    h0 = h0 * 29u + c;
    h1 = h1 * 131u + c;
  }
  return std::to_string((uint64_t{h0} << 32) | h1);
}

const ParallelGroup* group_of(const TraceSet& set, std::string_view op) {
  const auto at = op.rfind('@');
  if (at == std::string_view::npos) return nullptr;
  const std::string_view key = op.substr(at + 1);
  for (const auto& g : set.parallel_groups) {
    if (g.hash == key || g.id == key) return &g;
  }
  return nullptr;
}

std::optional<int64_t> global_of(const ParallelGroup& g, int64_t local) {
  if (local < 0 || static_cast<size_t>(local) >= g.global_ranks.size()) return std::nullopt;
  return g.global_ranks[static_cast<size_t>(local)];
}

std::optional<Rank> rank_of(const std::string& text) {
  int32_t v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc{} || r.ptr != text.data() + text.size()) return std::nullopt;
  return Rank(v);
}

// The HCCL lane op named like the link's op (up to '@') on the link's rank: its duration, and
// for P2P links with both global ranks known, the peer (unless the op already names it).
void join_with_lane(TraceSet& set, CommLinkRecord& link) {
  const auto rank = rank_of(link.rank);
  if (!rank) return;
  const std::string name = link.op.substr(0, link.op.rfind('@'));
  for (auto& tl : set.ranks) {
    if (tl.rank != *rank) continue;
    for (auto& s : tl.slices) {
      if ((s.kind != SliceKind::COLLECTIVE && s.kind != SliceKind::P2P) || set.strings.str(s.name) != name ||
          tl.streams[s.stream].name.rfind("HCCL ", 0) != 0) {
        continue;
      }
      link.lane_ms = static_cast<double>(s.dur_ns) / 1e6;
      if (s.kind != SliceKind::P2P || link.src == link.dst || !link.src_global || !link.dst_global) return;
      P2PPart part;
      if (*link.src_global == rank->v && *link.dst_global != rank->v) {
        part = {P2PDir::SEND, Rank(static_cast<int32_t>(*link.dst_global)), 0, std::nullopt};
      } else if (*link.dst_global == rank->v && *link.src_global != rank->v) {
        part = {P2PDir::RECV, Rank(static_cast<int32_t>(*link.src_global)), 0, std::nullopt};
      } else {
        set.notes.push_back(fmt::format("{}: {} link {}-{} maps to global ranks {}-{}, neither of which is rank {} "
                                        "whose file it is; peer not used",
                                        link.source, link.op, link.src, link.dst, *link.src_global, *link.dst_global,
                                        rank->v));
        return;
      }
      const bool known = std::any_of(s.p2p.begin(), s.p2p.end(), [&](const P2PPart& p) {
        return p.dir == part.dir && p.peer == part.peer;
      });
      if (!known) s.p2p.push_back(part);
      return;
    }
  }
}

}  // namespace

void read_profiler_metadata(const std::string& path, TraceSet& set) {
  const nlohmann::json j = detail::parse_json_file(path);
  if (!j.is_object() || !j.contains("parallel_group_info")) return;
  const auto& info = j.at("parallel_group_info");
  if (!info.is_object()) {
    throw TraceError(fmt::format("{}: \"parallel_group_info\" is a {}; expected an object group id → "
                                 "{{\"group_name\", \"global_ranks\": [...]}}",
                                 path, info.type_name()));
  }
  for (const auto& [id, g] : info.items()) {
    const auto ranks = g.is_object() && g.contains("global_ranks") ? g.at("global_ranks") : nlohmann::json();
    if (!ranks.is_array() || ranks.empty()) continue;  // msprof-analyze skips groups without a list too
    ParallelGroup pg{.source = path, .id = id, .name = g.value("group_name", std::string()), .hash = double_hash(id),
                     .global_ranks = {}};
    for (const auto& r : ranks) {
      if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() > INT32_MAX) {
        throw TraceError(fmt::format("{}: parallel_group_info \"{}\": global_ranks holds {}; expected ranks 0..{}", path,
                                     id, r.dump(), INT32_MAX));
      }
      pg.global_ranks.push_back(r.get<int64_t>());
    }
    std::sort(pg.global_ranks.begin(), pg.global_ranks.end());
    const auto same = std::find_if(set.parallel_groups.begin(), set.parallel_groups.end(),
                                   [&pg](const ParallelGroup& x) { return x.id == pg.id; });  // clang 14: no capture of bindings
    if (same == set.parallel_groups.end()) {
      set.parallel_groups.push_back(std::move(pg));
    } else if (same->global_ranks != pg.global_ranks) {
      throw TraceError(fmt::format("{}: parallel_group_info \"{}\" lists other ranks than {} does; expected one rank "
                                   "list per group",
                                   path, id, same->source));
    }
  }
  set.sources.push_back(path);
}

void resolve_comm_links(TraceSet& set) {
  size_t unmapped = 0;
  for (auto& link : set.comm_links) {
    const ParallelGroup* g = group_of(set, link.op);
    link.src_global = g ? global_of(*g, link.src) : std::nullopt;
    link.dst_global = g ? global_of(*g, link.dst) : std::nullopt;
    if (g && (!link.src_global || !link.dst_global)) {
      set.notes.push_back(fmt::format("{}: {} link {}-{}: group {} (\"{}\") has {} ranks; the link stays group-local",
                                      link.source, link.op, link.src, link.dst, g->id, g->name,
                                      g->global_ranks.size()));
      link.src_global.reset();
      link.dst_global.reset();
    }
    if (!g && link.src != link.dst) ++unmapped;
    join_with_lane(set, link);
  }
  if (unmapped > 0) {
    set.notes.push_back(fmt::format("{} communication_matrix.json link(s) name a group with no rank list "
                                    "(profiler_metadata.json parallel_group_info): their ranks are group-local",
                                    unmapped));
  }
}

}  // namespace ppstream::analyze
