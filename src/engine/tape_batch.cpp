// The batched tape replay (include/ppstream/engine/tape_batch.h): the tape's entries with their
// slots renumbered by liveness, evaluated for up to kMaxLanes cost vectors at once.
#include "ppstream/engine/tape_batch.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ppstream {
namespace {

bool is_arrival(TapeCost c) { return c == TapeCost::ARRIVAL || c == TapeCost::ARRIVAL_OR_EXTERNAL; }

}  // namespace

TapeBatch::TapeBatch(const Tape& tape, bool compact, const ZeroTerm& zero, int64_t chunk_terms)
    : chunk_terms_(chunk_terms) {
  if (chunk_terms < 1) throw std::invalid_argument("TapeBatch: chunk_terms must be >= 1");
  const std::vector<TapeEntry>& in = tape.entries();
  const std::vector<int32_t>& ops = tape.operands();
  const auto n = static_cast<int32_t>(in.size());
  std::vector<uint8_t> cost(in.size());
  for (size_t e = 0; e < in.size(); ++e)
    cost[e] = in[e].cost == TapeCost::NONE || (zero && zero(in[e])) ? kNoCost : is_arrival(in[e].cost) ? kArrival : kFixed;
  // Each entry writes one value; writer[slot]: the entry whose value the slot holds now. With
  // `compact`, an operand whose value is +0.0 in every replay (its root is a zero entry, below)
  // is dropped: every value is a finite double >= +0.0 (terms are >= 0, no slot holds -0.0), and
  // max(+0.0, x) is x for every such x. An entry left with no operand and no term is a zero
  // entry: its value is +0.0, it is not replayed and no entry reads it. One left with one
  // operand and no term is a copy: its value is its operand's (root[e], the entry that computes
  // it), it is not replayed, and its readers read the root.
  std::vector<int32_t> writer(static_cast<size_t>(tape.slots()), -1);
  std::vector<int32_t> root(in.size());
  std::vector<uint8_t> zero_value(compact ? in.size() : 0, 0);  // per entry: a zero entry
  std::vector<int32_t> last_read(in.size(), -1);  // per root: the last replayed entry that reads it
  const auto folded = [&](int32_t r) { return compact && zero_value[static_cast<size_t>(r)] != 0; };
  size_t o = 0;
  for (int32_t e = 0; e < n; ++e) {
    const TapeEntry& te = in[static_cast<size_t>(e)];
    const size_t first = o;
    int32_t kept = 0, single = -1;
    for (uint16_t k = 0; k < te.ops; ++k, ++o) {
      const int32_t w = writer[static_cast<size_t>(ops[o])];
      if (w < 0) throw std::logic_error("TapeBatch: tape entry " + std::to_string(e) + " reads a slot no entry wrote");
      const int32_t r = root[static_cast<size_t>(w)];
      if (folded(r)) continue;
      ++kept;
      single = r;
    }
    root[static_cast<size_t>(e)] = e;
    const bool no_term = cost[static_cast<size_t>(e)] == kNoCost;
    if (compact && no_term && kept == 0) {
      zero_value[static_cast<size_t>(e)] = 1;
    } else if (compact && no_term && kept == 1) {
      root[static_cast<size_t>(e)] = single;
    } else {
      for (size_t q = first; q < o; ++q) {
        const int32_t r = root[static_cast<size_t>(writer[static_cast<size_t>(ops[q])])];
        if (!folded(r)) last_read[static_cast<size_t>(r)] = e;
      }
    }
    writer[static_cast<size_t>(te.dst)] = e;
  }
  // The value an instruction's end slot (4g + 3) holds at the end of the tape is its end time;
  // its root enters the makespan (a copy's value is its root's: max() takes it once or twice
  // alike; a zero entry's +0.0 is the makespan's start).
  std::vector<uint8_t> end(in.size(), 0);
  for (int64_t g = 0; g < tape.instructions(); ++g)
    if (const int32_t w = writer[static_cast<size_t>(4 * g + 3)]; w >= 0) end[static_cast<size_t>(root[static_cast<size_t>(w)])] = 1;

  entries_.reserve(in.size());
  operands_.reserve(ops.size());
  std::vector<int32_t> phys(compact ? in.size() : 0);  // per root: its slot in the batch
  std::vector<int32_t> free_slots;
  std::fill(writer.begin(), writer.end(), -1);
  slots_ = compact ? 1 : tape.slots();  // compact: slot 0 takes the values no entry reads
  o = 0;
  for (int32_t e = 0; e < n; ++e) {
    const TapeEntry& te = in[static_cast<size_t>(e)];
    const size_t first = o;
    o += te.ops;
    const uint8_t c = cost[static_cast<size_t>(e)];
    if (c == kFixed) ++fixed_terms_;
    if (c == kArrival) ++arrival_terms_;
    if (!compact) {
      entries_.push_back({te.dst, te.ops, c, end[static_cast<size_t>(e)]});
      operands_.insert(operands_.end(), ops.begin() + static_cast<std::ptrdiff_t>(first),
                       ops.begin() + static_cast<std::ptrdiff_t>(o));
      continue;
    }
    if (root[static_cast<size_t>(e)] != e || zero_value[static_cast<size_t>(e)]) {
      writer[static_cast<size_t>(te.dst)] = e;  // a copy (its readers read its root) or a zero entry: not replayed
      continue;
    }
    Entry out{0, 0, c, end[static_cast<size_t>(e)]};
    for (size_t q = first; q < o; ++q) {
      const int32_t r = root[static_cast<size_t>(writer[static_cast<size_t>(ops[q])])];
      if (folded(r)) continue;
      operands_.push_back(phys[static_cast<size_t>(r)]);
      ++out.ops;
    }
    // Roots read for the last time here free their slots (once, whatever the repeats), which
    // this entry's own value may take: a lane reads all its operands before it writes.
    for (size_t q = first; q < o; ++q) {
      const int32_t r = root[static_cast<size_t>(writer[static_cast<size_t>(ops[q])])];
      if (folded(r) || last_read[static_cast<size_t>(r)] != e) continue;
      last_read[static_cast<size_t>(r)] = -2;
      free_slots.push_back(phys[static_cast<size_t>(r)]);
    }
    if (last_read[static_cast<size_t>(e)] < 0) {
      out.dst = 0;
    } else if (!free_slots.empty()) {
      out.dst = free_slots.back();
      free_slots.pop_back();
    } else {
      out.dst = slots_++;
    }
    phys[static_cast<size_t>(e)] = out.dst;
    writer[static_cast<size_t>(te.dst)] = e;
    entries_.push_back(out);
  }
  entries_.shrink_to_fit();
  operands_.shrink_to_fit();
  // Segments of at most chunk_terms terms, in entry order.
  Segment seg;
  o = 0;
  for (size_t e = 0; e < entries_.size(); ++e) {
    const Entry& en = entries_[e];
    if (en.cost != kNoCost && (seg.fixed_end - seg.fixed_begin) + (seg.arrival_end - seg.arrival_begin) == chunk_terms) {
      seg.entry_end = static_cast<int64_t>(e);
      segments_.push_back(seg);
      seg = {seg.entry_end, seg.entry_end, static_cast<int64_t>(o), seg.fixed_end, seg.fixed_end, seg.arrival_end, seg.arrival_end};
    }
    if (en.cost == kFixed) ++seg.fixed_end;
    if (en.cost == kArrival) ++seg.arrival_end;
    o += en.ops;
  }
  seg.entry_end = static_cast<int64_t>(entries_.size());
  segments_.push_back(seg);
}

size_t TapeBatch::bytes() const {
  return entries_.capacity() * sizeof(Entry) + operands_.capacity() * sizeof(int32_t) +
         segments_.capacity() * sizeof(Segment);
}

template <int W>
void TapeBatch::run(const Segment& seg, const double* fixed, const double* arrival, double* v, double* makespan) const {
  double ms[W];
  for (int l = 0; l < W; ++l) ms[l] = makespan[l];
  const int32_t* op = operands_.data() + seg.operand;
  // The slots of the operands kPrefetch ahead are asked from memory while this entry computes:
  // on a large world the live slots outgrow the caches and a read of a value written long before
  // is a miss the out-of-order window alone does not hide (docs/semantics.md "The batched
  // replay"). A hint only: no value changes.
  const int32_t* const operands = operands_.data();
  const size_t n_operands = operands_.size();
  const Entry* const end = entries_.data() + seg.entry_end;
  for (const Entry* it = entries_.data() + seg.entry; it != end; ++it) {
    const Entry& e = *it;
    const size_t ahead = static_cast<size_t>(op - operands) + kPrefetch;
    for (size_t q = ahead; q < std::min(ahead + e.ops, n_operands); ++q)
      for (size_t b = 0; b < W * sizeof(double); b += 64)  // every cache line of the slot's W lanes
        __builtin_prefetch(reinterpret_cast<const char*>(v + static_cast<size_t>(operands[q]) * W) + b);
    // One lane's arithmetic is replay_tape's: max over the operands in order, then one addition.
    double t[W];
    if (e.ops > 0) {
      const double* s = v + static_cast<size_t>(*op++) * W;
      for (int l = 0; l < W; ++l) t[l] = s[l];
      for (uint16_t k = 1; k < e.ops; ++k) {
        s = v + static_cast<size_t>(*op++) * W;
        for (int l = 0; l < W; ++l) t[l] = std::max(t[l], s[l]);
      }
    } else {
      for (int l = 0; l < W; ++l) t[l] = 0.0;
    }
    if (e.cost == kFixed) {
      for (int l = 0; l < W; ++l) t[l] += fixed[l];
      fixed += W;
    } else if (e.cost == kArrival) {
      for (int l = 0; l < W; ++l) t[l] += arrival[l];
      arrival += W;
    }
    if (e.end)
      for (int l = 0; l < W; ++l) ms[l] = std::max(ms[l], t[l]);
    double* d = v + static_cast<size_t>(e.dst) * W;
    for (int l = 0; l < W; ++l) d[l] = t[l];
  }
  for (int l = 0; l < W; ++l) makespan[l] = ms[l];
}

// run<1> .. run<kMaxLanes>, by lane count - 1.
template <size_t... I>
constexpr auto TapeBatch::runs(std::index_sequence<I...>) -> std::array<RunFn, sizeof...(I)> {
  return {&TapeBatch::run<static_cast<int>(I) + 1>...};
}
const std::array<TapeBatch::RunFn, TapeBatch::kMaxLanes> TapeBatch::kRuns =
    TapeBatch::runs(std::make_index_sequence<TapeBatch::kMaxLanes>());

bool TapeBatch::replay(int32_t lanes, const TermSource& terms, std::vector<double>& buffer, std::vector<double>& chunk,
                       double* makespan) const {
  if (lanes < 1 || lanes > kMaxLanes)
    throw std::invalid_argument("TapeBatch::replay: " + std::to_string(lanes) + " lanes; expected 1 to " +
                                std::to_string(kMaxLanes));
  const auto w = static_cast<size_t>(lanes);
  if (buffer.size() < static_cast<size_t>(slots_) * w) buffer.resize(static_cast<size_t>(slots_) * w);
  if (chunk.size() < static_cast<size_t>(chunk_terms_) * w) chunk.resize(static_cast<size_t>(chunk_terms_) * w);
  std::vector<double> ms(w, 0.0);
  for (const Segment& seg : segments_) {
    double* fixed = chunk.data();
    double* arrival = fixed + static_cast<size_t>(seg.fixed_end - seg.fixed_begin) * w;
    if (seg.fixed_end > seg.fixed_begin && !terms(false, seg.fixed_begin, seg.fixed_end - seg.fixed_begin, lanes, fixed))
      return false;
    if (seg.arrival_end > seg.arrival_begin &&
        !terms(true, seg.arrival_begin, seg.arrival_end - seg.arrival_begin, lanes, arrival))
      return false;
    (this->*kRuns[w - 1])(seg, fixed, arrival, buffer.data(), ms.data());
  }
  std::copy(ms.begin(), ms.end(), makespan);
  return true;
}

}  // namespace ppstream
