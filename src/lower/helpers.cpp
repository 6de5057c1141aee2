// Small constructors shared by the lowering passes (one spelling of every event name).
#include "passes.h"

#include <fmt/format.h>

namespace ppstream::lower {

Instr make_compute(OpKind op, Microbatch mb, Stage s) {
  Instr i;
  i.op = op;
  i.stream = "compute";
  i.mb = mb;
  i.stage = s;
  return i;
}

Instr make_event(OpKind op, const std::string& stream, const std::string& event) {
  Instr i;
  i.op = op;
  i.stream = stream;
  i.event = event;
  return i;
}

Instr make_stage_op(OpKind op, const std::string& stream, Stage s) {
  Instr i;
  i.op = op;
  i.stream = stream;
  i.stage = s;
  return i;
}

std::string stage_event(const char* prefix, Stage s) { return fmt::format("{}[s{}]", prefix, s.v); }

std::string mb_stage_event(const char* prefix, Microbatch mb, Stage s) {
  return fmt::format("{}[mb{},s{}]", prefix, mb.v, s.v);
}

}  // namespace ppstream::lower
