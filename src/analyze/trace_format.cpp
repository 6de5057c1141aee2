// Reads the P2P ops back out of a canonical BATCH text (the grammar of docs/semantics.md).
#include "ppstream/analyze/trace_format.h"

#include <fmt/format.h>

#include <charconv>

namespace ppstream::analyze::trace_format {

std::vector<P2PPart> parse_batch_parts(std::string_view text) {
  std::vector<P2PPart> parts;
  auto open = text.find("BATCH{");
  if (open == std::string_view::npos) return parts;
  auto close = text.find('}', open);
  if (close == std::string_view::npos) {
    throw TraceError(fmt::format("P2P text '{}': BATCH{{ without a closing '}}'", text));
  }
  std::string_view body = text.substr(open + 6, close - open - 6);
  while (!body.empty()) {
    auto semi = body.find(';');
    std::string_view op = body.substr(0, semi);
    body = semi == std::string_view::npos ? std::string_view{} : body.substr(semi + 1);
    auto arrow = op.find("->r");
    P2PDir dir = P2PDir::SEND;
    if (arrow == std::string_view::npos) {
      arrow = op.find("<-r");
      dir = P2PDir::RECV;
    }
    if (arrow == std::string_view::npos) {
      throw TraceError(fmt::format("P2P text '{}': op '{}' has no '->rN' or '<-rN' peer", text, op));
    }
    std::string_view digits = op.substr(arrow + 3);
    while (!digits.empty() && digits.back() == ' ') digits.remove_suffix(1);
    int32_t peer = 0;
    auto r = std::from_chars(digits.data(), digits.data() + digits.size(), peer);
    if (r.ec != std::errc{} || r.ptr != digits.data() + digits.size()) {
      throw TraceError(fmt::format("P2P text '{}': op '{}': peer '{}' is not a rank number", text,
                                   op, digits));
    }
    auto kind = op.find_first_not_of(' ');
    char phase = 0;
    if (kind != std::string_view::npos && op.size() > kind + 5) {
      char c = op[kind + 5];  // SEND_F / RECV_B
      if (c == 'F' || c == 'B') phase = c;
    }
    parts.push_back({dir, Rank(peer), phase});
  }
  return parts;
}

}  // namespace ppstream::analyze::trace_format
