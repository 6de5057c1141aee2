// TEMPORARY (test-only): canonical text printers until branch `sched` lands format.h's
// implementation; delete this file when merging it.
#include <fmt/format.h>

#include "ppstream/program/format.h"

namespace ppstream {
std::string to_text(const P2POp& op) {
  return fmt::format("{} mb{} s{} {}r{}", to_string(op.kind), op.mb.v, op.stage.v, is_send(op.kind) ? "->" : "<-",
                     op.peer.v);
}
std::string to_text(const Instr& i) {
  std::string body;
  switch (i.op) {
    case OpKind::F:
    case OpKind::B: body = fmt::format("{} mb{} s{}", to_string(i.op), i.mb.v, i.stage.v); break;
    case OpKind::BATCH:
      body = "BATCH{";
      for (size_t k = 0; k < i.p2p.size(); ++k) body += (k ? "; " : "") + to_text(i.p2p[k]);
      body += "}";
      break;
    case OpKind::RECORD:
    case OpKind::WAIT: body = fmt::format("{} {}", to_string(i.op), i.event); break;
    case OpKind::UNSHARD:
    case OpKind::RESHARD:
    case OpKind::REDUCE_GRAD: body = fmt::format("{} s{}", to_string(i.op), i.stage.v); break;
    case OpKind::OPT_STEP: body = "OPT_STEP"; break;
  }
  return i.stream + " " + body;
}
std::string to_text(Rank r, const Instr& i) { return fmt::format("r{} {}", r.v, to_text(i)); }
}  // namespace ppstream
