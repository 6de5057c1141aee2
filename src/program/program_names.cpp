// A Program's name tables (streams, events, collectives; ir.h): interning names, looking them up, and program
// equality that compares streams and events by name rather than by table position.
#include <algorithm>

#include "ppstream/program/ir.h"

namespace ppstream {
namespace {

template <class Id>
std::optional<Id> find_name(const std::vector<std::string>& names, std::string_view name) {
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return std::nullopt;
  return Id{static_cast<uint32_t>(it - names.begin())};
}

template <class Id>
Id intern_name(std::vector<std::string>& names, std::string_view name) {
  if (auto id = find_name<Id>(names, name)) return *id;
  names.emplace_back(name);
  return Id{static_cast<uint32_t>(names.size() - 1)};
}

// Whether id `a` of table `na` and id `b` of table `nb` name the same thing: equal names, or
// (both outside their tables) equal ids.
template <class Id>
bool same_name(const std::vector<std::string>& na, Id a, const std::vector<std::string>& nb, Id b) {
  const bool in_a = a.v < na.size(), in_b = b.v < nb.size();
  return in_a && in_b ? na[a.v] == nb[b.v] : !in_a && !in_b && a == b;
}

bool has_event(OpKind k) { return k == OpKind::RECORD || k == OpKind::WAIT; }

// Whether id `a` of table `ta` and id `b` of table `tb` hold equal specs (or, both outside
// their tables, are equal ids).
bool same_collective(const std::vector<Collective>& ta, CollectiveId a, const std::vector<Collective>& tb,
                     CollectiveId b) {
  const bool in_a = a.v < ta.size(), in_b = b.v < tb.size();
  return in_a && in_b ? ta[a.v] == tb[b.v] : !in_a && !in_b && a == b;
}

}  // namespace

std::optional<StreamId> Program::find_stream(std::string_view name) const { return find_name<StreamId>(stream_names, name); }
StreamId Program::intern_stream(std::string_view name) { return intern_name<StreamId>(stream_names, name); }
std::optional<EventId> Program::find_event(std::string_view name) const { return find_name<EventId>(event_names, name); }
EventId Program::intern_event(std::string_view name) { return intern_name<EventId>(event_names, name); }
CollectiveId Program::intern_collective(const Collective& c) {
  const auto it = std::find(collectives.begin(), collectives.end(), c);
  if (it != collectives.end()) return CollectiveId{static_cast<uint32_t>(it - collectives.begin())};
  collectives.push_back(c);
  return CollectiveId{static_cast<uint32_t>(collectives.size() - 1)};
}

bool Program::operator==(const Program& o) const {
  if (rank != o.rank || pp_rank != o.pp_rank || instrs.size() != o.instrs.size()) return false;
  if (stream_names == o.stream_names && event_names == o.event_names && collectives == o.collectives)
    return instrs == o.instrs;
  for (size_t k = 0; k < instrs.size(); ++k) {
    const Instr& a = instrs[k];
    const Instr& b = o.instrs[k];
    if (!same_name(stream_names, a.stream, o.stream_names, b.stream)) return false;
    if (has_event(a.op) && has_event(b.op) && !same_name(event_names, a.event, o.event_names, b.event)) return false;
    Instr b_here = b;  // b with a's ids for its (equal) names: every other field compared by Instr's ==
    b_here.stream = a.stream;
    if (has_event(a.op) && has_event(b.op)) b_here.event = a.event;
    const bool colls = a.op == OpKind::COLLECTIVE && b.op == OpKind::COLLECTIVE;
    if (colls && !same_collective(collectives, a.coll, o.collectives, b.coll)) return false;
    if (colls) b_here.coll = a.coll;
    if (!(a == b_here)) return false;
  }
  return true;
}

}  // namespace ppstream
