// The parsers' index of one program's stream table: interning a name costs O(1) instead of
// Program::intern_stream's scan, which suits the handful of streams a compiled program has but is
// quadratic for a parsed file naming thousands (the verifier refuses > 64 per rank, but the
// parsers must read such a file quickly to say so).
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include "ppstream/program/ir.h"

namespace ppstream::detail {

class StreamIndex {
 public:
  // The id of `name` in p's table, appending it on first use (as Program::intern_stream). Use one
  // index per program, and only it to add names while it lives.
  StreamId intern(Program& p, std::string_view name) {
    if (ids_.empty())
      for (size_t k = 0; k < p.stream_names.size(); ++k) ids_.emplace(p.stream_names[k], StreamId{static_cast<uint32_t>(k)});
    if (const auto it = ids_.find(name); it != ids_.end()) return it->second;
    const StreamId id{static_cast<uint32_t>(p.stream_names.size())};
    p.stream_names.emplace_back(name);
    ids_.emplace(p.stream_names.back(), id);
    return id;
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, StreamId, Hash, std::equal_to<>> ids_;
};

}  // namespace ppstream::detail
