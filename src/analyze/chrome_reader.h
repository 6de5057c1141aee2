// Reading one Chrome trace buffer (any of our three Chrome-based formats) into a TraceSet.
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze::detail {

struct ChromeReadOptions {
  std::optional<Rank> rank;  // Ascend directories: the rank from profiler_info_<rank>.json
};

// Throws TraceError on malformed input, duplicate ranks and traces with no device lanes.
void read_chrome_buffer(const std::string& path, const simdjson::padded_string& buf, TraceSet& set,
                        const ChromeReadOptions& opts);

}  // namespace ppstream::analyze::detail
