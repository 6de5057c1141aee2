// RankClocks: happens-before inside one rank (docs/semantics.md "Buffers and happens-before")
// as vector clocks over the rank's streams, computed in program order: each instruction ticks
// its stream, RECORD stores the stream's clock in the event (replacing an earlier record's), WAIT
// joins the clock of the event's most recent RECORD before it into its stream. O(instructions × streams) time and memory per rank.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/topology.h"

namespace ppstream::verify_detail {

class RankClocks {
 public:
  RankClocks(const engine::Topology& t, int32_t prog);
  // Does instruction a happen-before instruction b (a != b) through same-stream FIFO order and
  // RECORD→WAIT edges? Cross-rank chains are ignored (sound, may over-report).
  bool hb(int32_t a, int32_t b) const {
    return a != b && clock_[static_cast<size_t>(b) * n_ + stream_[a]] >= own_[a];
  }

 private:
  size_t n_ = 0;                 // streams of the rank
  std::vector<int32_t> clock_;   // [instruction * n_ + stream]: instructions of that stream known done
  std::vector<uint16_t> stream_;
  std::vector<int32_t> own_;     // 1-based position of each instruction on its stream
};

}  // namespace ppstream::verify_detail
