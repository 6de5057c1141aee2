// Small constructors shared by the lowering passes (one spelling of every event name).
#include "passes.h"
#include "ppstream/program/streams.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace ppstream::lower {

Instr make_compute(OpKind op, Microbatch mb, Stage s) {
  Instr i;
  i.op = op;
  i.stream = streams::kCompute;
  i.mb = mb;
  i.stage = s;
  return i;
}

Instr make_event(OpKind op, StreamId stream, EventId event) {
  Instr i;
  i.op = op;
  i.stream = stream;
  i.event = event;
  return i;
}

Instr make_stage_op(OpKind op, StreamId stream, Stage s, Bucket b) {
  Instr i;
  i.op = op;
  i.stream = stream;
  i.stage = s;
  i.bucket = b;
  return i;
}

void insert_before(std::vector<Instr>& instrs, std::vector<std::pair<size_t, Instr>> items) {
  if (items.empty()) return;
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const size_t old_size = instrs.size();
  if (items.back().first > old_size) throw std::logic_error("insert_before: a position past the program's end");
  instrs.resize(old_size + items.size());
  // Invariant: write - k == the number of items at positions <= k still to place, so the
  // sweep never overwrites an instruction it has not moved yet; it ends when none are left.
  size_t write = instrs.size(), k = old_size, item = items.size();
  while (item > 0) {
    while (item > 0 && items[item - 1].first == k) instrs[--write] = std::move(items[--item].second);
    if (item == 0) break;
    --k;
    instrs[--write] = std::move(instrs[k]);
  }
}

std::string stage_event(const char* prefix, Stage s, Bucket b) {
  return b.whole() ? fmt::format("{}[s{}]", prefix, s.v) : fmt::format("{}[s{}.b{}]", prefix, s.v, b.index);
}

std::string mb_stage_event(const char* prefix, Microbatch mb, Stage s) {
  return fmt::format("{}[mb{},s{}]", prefix, mb.v, s.v);
}

}  // namespace ppstream::lower
