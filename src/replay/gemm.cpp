#include "replay/gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "replay/clock.h"

namespace ppstream::replay {

Gemm::Gemm(int32_t n) : n_(n) {
  const auto N = static_cast<size_t>(n);
  a_.resize(N * N);
  b_.resize(N * N);
  c_.resize(N * N);
  for (size_t i = 0; i < N; ++i)
    for (size_t j = 0; j < N; ++j) {
      a_[i * N + j] = static_cast<double>((i + 2 * j) % 7) - 3;
      b_[i * N + j] = static_cast<double>((3 * i + j) % 5) - 2;
    }
  want_diag_.assign(N, 0.0);
  for (size_t i = 0; i < N; ++i)
    for (size_t k = 0; k < N; ++k) want_diag_[i] += a_[i * N + k] * b_[k * N + i];
}

std::optional<std::string> Gemm::multiply() {
  const auto N = static_cast<size_t>(n_);
  std::fill(c_.begin(), c_.end(), 0.0);
  for (size_t i = 0; i < N; ++i)
    for (size_t k = 0; k < N; ++k) {
      const double aik = a_[i * N + k];
      const double* brow = &b_[k * N];
      double* crow = &c_[i * N];
      for (size_t j = 0; j < N; ++j) crow[j] += aik * brow[j];
    }
  for (size_t i = 0; i < N; ++i)
    if (c_[i * N + i] != want_diag_[i])
      return fmt::format("gemm {}x{}: C[{}][{}] is {}, expected {}", n_, n_, i, i, c_[i * N + i], want_diag_[i]);
  return std::nullopt;
}

double Gemm::measure_ms(int32_t reps) {
  std::vector<double> t;
  for (int32_t r = 0; r < std::max(1, reps); ++r) {
    const double t0 = now_ms();
    (void)multiply();
    t.push_back(now_ms() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int64_t Gemm::reps_for(double model_ms, double gemm_ms) const {
  if (model_ms <= 0) return 0;
  return std::max<int64_t>(1, std::llround(model_ms / std::max(gemm_ms, 1e-6)));
}

}  // namespace ppstream::replay
