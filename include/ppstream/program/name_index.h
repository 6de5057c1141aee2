// An index over one of a Program's name tables (stream_names, event_names; ir.h) for code that
// interns many names: O(1) per name instead of Program::intern_stream / intern_event's scan,
// which suits a handful of names but is quadratic for the thousands of events a long schedule
// records (or a parsed file naming thousands of streams).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ppstream {

// Id is StreamId or EventId. Use one index per table, and only it to add names while it lives.
template <class Id>
class NameIndex {
 public:
  // The id of `name` in `names`, appending it on first use.
  Id intern(std::vector<std::string>& names, std::string_view name) {
    for (; indexed_ < names.size(); ++indexed_)  // names the table holds that are not indexed yet
      ids_.emplace(names[indexed_], Id{static_cast<uint32_t>(indexed_)});
    if (const auto it = ids_.find(name); it != ids_.end()) return it->second;
    const Id id{static_cast<uint32_t>(names.size())};
    names.emplace_back(name);
    ids_.emplace(names.back(), id);
    ++indexed_;
    return id;
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, Id, Hash, std::equal_to<>> ids_;
  size_t indexed_ = 0;  // names[0, indexed_) are in ids_ (the first of a duplicate wins)
};

}  // namespace ppstream
