#include "replay/contents.h"

#include <fmt/format.h>

namespace ppstream::replay {
namespace {

double base(int32_t rank) { return static_cast<double>(rank % 64 + 1); }

std::optional<std::string> mismatch(int64_t j, double got, double want) {
  if (got == want) return std::nullopt;
  return fmt::format("element {} is {}, expected {}", j, got, want);
}

}  // namespace

double p2p_value(int32_t sender, const P2POp& op, int32_t step, int64_t j) {
  const int64_t mix = int64_t{op.mb.v} * 31 + int64_t{op.stage.v} * 7 + static_cast<int64_t>(op.kind) + step + j;
  return base(sender) * 1000 + static_cast<double>(mix % 64);
}
double grad_value(int32_t rank, Stage s, int32_t step, int64_t j) {
  return base(rank) + static_cast<double>((j + 7 * int64_t{s.v} + 3 * int64_t{step}) % 16);
}
double param_value(int32_t rank, Stage s, int32_t step, int64_t j) {
  return base(rank) * 100 + static_cast<double>((j + 5 * int64_t{s.v} + step) % 16);
}

void fill_p2p(std::vector<double>& buf, int32_t sender, const P2POp& op, int32_t step) {
  for (size_t j = 0; j < buf.size(); ++j) buf[j] = p2p_value(sender, op, step, static_cast<int64_t>(j));
}
void fill_grad(std::vector<double>& buf, int32_t rank, Stage s, int32_t step) {
  for (size_t j = 0; j < buf.size(); ++j) buf[j] = grad_value(rank, s, step, static_cast<int64_t>(j));
}
void fill_param(std::vector<double>& buf, int32_t rank, Stage s, int32_t step) {
  for (size_t j = 0; j < buf.size(); ++j) buf[j] = param_value(rank, s, step, static_cast<int64_t>(j));
}

std::optional<std::string> check_p2p(const std::vector<double>& buf, Rank self, const P2POp& recv, int32_t step) {
  const P2POp sent = mirror_of(recv, self);  // the op as the sender wrote it
  for (size_t j = 0; j < buf.size(); ++j)
    if (auto m = mismatch(static_cast<int64_t>(j), buf[j], p2p_value(recv.peer.v, sent, step, static_cast<int64_t>(j))))
      return m;
  return std::nullopt;
}

std::optional<std::string> check_reduced(const std::vector<double>& out, int64_t chunk, const std::vector<int32_t>& members,
                                         Stage s, int32_t step) {
  const auto n = static_cast<int64_t>(out.size());
  for (int64_t j = 0; j < n; ++j) {
    double want = 0;
    for (int32_t m : members) want += grad_value(m, s, step, chunk * n + j);
    if (auto bad = mismatch(chunk * n + j, out[static_cast<size_t>(j)], want)) return bad;
  }
  return std::nullopt;
}

std::optional<std::string> check_gathered(const std::vector<double>& out, const std::vector<int32_t>& members, Stage s,
                                          int32_t step) {
  const auto c = static_cast<int64_t>(out.size() / members.size());
  for (size_t i = 0; i < members.size(); ++i)
    for (int64_t j = 0; j < c; ++j)
      if (auto bad = mismatch(static_cast<int64_t>(i) * c + j, out[i * static_cast<size_t>(c) + static_cast<size_t>(j)],
                              param_value(members[i], s, step, j)))
        return bad;
  return std::nullopt;
}

}  // namespace ppstream::replay
