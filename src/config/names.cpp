// Spellings of the config enums, the registered extra sections and the World a config describes.
#include <array>

#include "ppstream/config/config.h"

namespace ppstream {
namespace {
constexpr std::array<const char*, 7> kScheduleNames = {"gpipe", "1f1b", "interleaved_1f1b", "zb_h1",
                                                       "interleaved_zb", "zbv", "dualpipev"};
constexpr std::array<const char*, 3> kTransportNames = {"plain", "batch", "multi_stream"};
}  // namespace

const char* to_string(ScheduleKind k) { return kScheduleNames[static_cast<size_t>(k)]; }
const char* to_string(P2PTransport t) { return kTransportNames[static_cast<size_t>(t)]; }
const char* to_string(ReduceOrder o) { return o == ReduceOrder::PRIORITY ? "priority" : "program"; }

std::optional<ScheduleKind> parse_schedule_kind(const std::string& s) {
  for (size_t i = 0; i < kScheduleNames.size(); ++i)
    if (s == kScheduleNames[i]) return static_cast<ScheduleKind>(i);
  return std::nullopt;
}

std::optional<P2PTransport> parse_p2p_transport(const std::string& s) {
  for (size_t i = 0; i < kTransportNames.size(); ++i)
    if (s == kTransportNames[i]) return static_cast<P2PTransport>(i);
  return std::nullopt;
}

// Other issues add their section names here; the loader keeps these sections as YAML text.
const std::vector<std::string>& extra_section_names() {
  static const std::vector<std::string> names = {"cost", "straggler", "model", "train", "simulate"};
  return names;
}

World PipelineConfig::world(bool expanded) const {
  return World{pipeline_parallel_size, pipeline_parallel_interleave_num, shard_size, replicate_size,
               expanded, placement()};
}

}  // namespace ppstream
