// Wall-clock time for replay: milliseconds on CLOCK_REALTIME, shared by every process of one
// host (across hosts it assumes NTP-synchronised clocks; docs/replay.md), and sleeping to an
// absolute time so that consecutive sleeps do not accumulate drift.
#pragma once

#include <chrono>
#include <thread>

namespace ppstream::replay {

inline double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
}

inline void sleep_until_ms(double t_ms) {
  const auto tp = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double, std::milli>(t_ms)));
  std::this_thread::sleep_until(tp);
}

}  // namespace ppstream::replay
