// Real compute for `replay --compute gemm`: an n × n double-precision matrix multiply
// (C = A·B, i-k-j loops, no BLAS) whose time is measured once when the device is built, so a
// compute instruction of d ms (the cost model's) runs round(d / gemm_ms) multiplies. A and B
// hold small integers, so every element of C is exact and the product is checked (the work
// cannot be optimised away or silently wrong). docs/replay.md, "Compute".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ppstream::replay {

class Gemm {
 public:
  explicit Gemm(int32_t n);
  // One multiply; returns nullopt when C holds the exact product, else what differs.
  std::optional<std::string> multiply();
  // Median wall time (ms) of `reps` multiplies (at least 1).
  double measure_ms(int32_t reps);
  // Multiplies for a compute op of `model_ms` (0 when the op is free).
  int64_t reps_for(double model_ms, double gemm_ms) const;
  int32_t n() const { return n_; }

 private:
  int32_t n_;
  std::vector<double> a_, b_, c_;
  std::vector<double> want_diag_;  // exact C[i][i]
};

}  // namespace ppstream::replay
