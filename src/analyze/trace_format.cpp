// Reads the P2P ops back out of a canonical BATCH text with the program text parser, so the
// analyzer and the program format share one grammar (docs/semantics.md).
#include "ppstream/analyze/trace_format.h"

#include <fmt/format.h>

#include "ppstream/program/format.h"

namespace ppstream::analyze::trace_format {

std::vector<P2PPart> parse_batch_parts(std::string_view text) {
  std::vector<P2PPart> parts;
  if (text.find("BATCH{") == std::string_view::npos) return parts;
  Instr in;
  try {
    in = parse_instr_line(std::string(text), "P2P slice name").instrs.front();
  } catch (const ParseError& e) {
    throw TraceError(fmt::format("P2P text '{}': not a canonical BATCH line 'r<rank> <stream> BATCH{{…}}': {}",
                                 text, e.what()));
  }
  if (in.op != OpKind::BATCH) {
    throw TraceError(fmt::format("P2P text '{}': expected a BATCH instruction", text));
  }
  for (const P2POp& op : in.p2p) {
    parts.push_back({is_send(op.kind) ? P2PDir::SEND : P2PDir::RECV, op.peer, is_forward(op.kind) ? 'F' : 'B', op});
  }
  return parts;
}

}  // namespace ppstream::analyze::trace_format
