// A Program's stream table (streams.h): interning names, looking them up, and program equality
// that compares streams by name rather than by table position.
#include <algorithm>

#include "ppstream/program/ir.h"

namespace ppstream {

std::optional<StreamId> Program::find_stream(std::string_view name) const {
  const auto it = std::find(stream_names.begin(), stream_names.end(), name);
  if (it == stream_names.end()) return std::nullopt;
  return StreamId{static_cast<uint32_t>(it - stream_names.begin())};
}

StreamId Program::intern_stream(std::string_view name) {
  if (auto id = find_stream(name)) return *id;
  stream_names.emplace_back(name);
  return StreamId{static_cast<uint32_t>(stream_names.size() - 1)};
}

namespace {
// The name of `id` in `p`, or nullptr for an id outside its table (compared as the raw id).
const std::string* name_or_null(const Program& p, StreamId id) {
  return id.v < p.stream_names.size() ? &p.stream_names[id.v] : nullptr;
}
}  // namespace

bool Program::operator==(const Program& o) const {
  if (rank != o.rank || pp_rank != o.pp_rank || instrs.size() != o.instrs.size()) return false;
  if (stream_names == o.stream_names) return instrs == o.instrs;
  for (size_t k = 0; k < instrs.size(); ++k) {
    const Instr& a = instrs[k];
    const Instr& b = o.instrs[k];
    const std::string* na = name_or_null(*this, a.stream);
    const std::string* nb = name_or_null(o, b.stream);
    const bool same_stream = na && nb ? *na == *nb : a.stream == b.stream && !na && !nb;
    if (!same_stream) return false;
    Instr b_here = b;  // b with a's id for its (equal) stream: every other field compared by Instr's ==
    b_here.stream = a.stream;
    if (!(a == b_here)) return false;
  }
  return true;
}

}  // namespace ppstream
