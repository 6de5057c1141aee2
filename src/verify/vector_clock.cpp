// Vector clocks for one rank, in program order (see vector_clock.h).
#include "verify/vector_clock.h"

#include <algorithm>

namespace ppstream::verify_detail {

RankClocks::RankClocks(const engine::Topology& t, int32_t prog) {
  const auto& instrs = t.program(prog).instrs;
  n_ = static_cast<size_t>(t.streams(prog));
  const size_t events = static_cast<size_t>(t.event_base[prog + 1] - t.event_base[prog]);
  clock_.assign(instrs.size() * n_, 0);
  stream_.resize(instrs.size());
  own_.resize(instrs.size());
  std::vector<int32_t> cur(n_ * n_, 0);         // [stream * n_ + stream]
  std::vector<int32_t> event_clock(events * n_, 0);  // each event's clock at its latest RECORD so far
  std::vector<char> recorded(events, 0);
  for (size_t i = 0; i < instrs.size(); ++i) {
    const int32_t g = t.global(prog, static_cast<int32_t>(i));
    const size_t s = t.stream_of[g];
    int32_t* c = &cur[s * n_];
    const Instr& in = instrs[i];
    const bool event_op = in.op == OpKind::WAIT || in.op == OpKind::RECORD;
    const auto ev = static_cast<size_t>(event_op ? t.event_id(g) : 0);
    if (in.op == OpKind::WAIT && recorded[ev]) {
      const int32_t* e = &event_clock[ev * n_];
      for (size_t k = 0; k < n_; ++k) c[k] = std::max(c[k], e[k]);
    }
    ++c[s];
    stream_[i] = static_cast<uint16_t>(s);
    own_[i] = c[s];
    std::copy(c, c + n_, &clock_[i * n_]);
    // A WAIT synchronizes with the most recent RECORD before it in program order (CUDA/ACL: a
    // record overwrites the event's state; Topology::wait_record): every RECORD replaces the clock.
    if (in.op == OpKind::RECORD) {
      recorded[ev] = 1;
      std::copy(c, c + n_, &event_clock[ev * n_]);
    }
  }
}

}  // namespace ppstream::verify_detail
