// Canonical text printer of programs: the one spelling shared by golden files, traces and
// verifier messages. The parser (parse_text.cpp) reads exactly this form back.
#include <stdexcept>
#include <string>

#include "ppstream/program/format.h"

namespace ppstream {
namespace {

void append_int(std::string& out, const char* prefix, int32_t v) {
  out += prefix;
  out += std::to_string(v);
}

// " bucket<j>/<k>" for a piece of a bucketed stage; nothing for the whole stage.
void append_bucket(std::string& out, const Instr& i) {
  if (i.bucket.whole()) return;
  append_int(out, " bucket", i.bucket.index);
  append_int(out, "/", i.bucket.count);
}

void append_p2p(std::string& out, const P2POp& op) {
  out += to_string(op.kind);
  append_int(out, " mb", op.mb.v);
  append_int(out, " s", op.stage.v);
  append_int(out, is_send(op.kind) ? " ->r" : " <-r", op.peer.v);
}

// Appends "ALL_REDUCE clip[r0..r63]" (format.h: the members as a strided range).
void append_collective(std::string& out, const Collective& c) {
  out += to_string(c.op);
  out += ' ';
  out += c.group;
  append_int(out, "[r", c.first.v);
  if (c.count > 1) append_int(out, "..r", c.last().v);
  if (c.count > 1 && c.stride != 1) append_int(out, ":", c.stride);
  out += ']';
}

// Appends "<OP> <args>"; only the fields the kind uses are printed.
void append_op(std::string& out, const Program& p, const Instr& i) {
  out += to_string(i.op);
  switch (i.op) {
    case OpKind::F:
    case OpKind::B:
    case OpKind::I:
    case OpKind::W:
      append_int(out, " mb", i.mb.v);
      append_int(out, " s", i.stage.v);
      append_bucket(out, i);
      break;
    case OpKind::BATCH:
      out += '{';
      for (size_t k = 0; k < i.p2p.size(); ++k) {
        if (k > 0) out += "; ";
        append_p2p(out, i.p2p[k]);
      }
      out += '}';
      break;
    case OpKind::RECORD:
    case OpKind::WAIT:
      out += ' ';
      out += p.event_name(i.event);
      break;
    case OpKind::UNSHARD:
    case OpKind::RESHARD:
    case OpKind::REDUCE_GRAD:
      append_int(out, " s", i.stage.v);
      append_bucket(out, i);
      break;
    case OpKind::OPT_STEP:
      break;
    case OpKind::COLLECTIVE:
      out += ' ';
      append_collective(out, p.collective(i.coll));
      break;
  }
}

// Appends "<stream> <OP> <args>".
void append_instr(std::string& out, const Program& p, const Instr& i) {
  out += p.stream_name(i.stream);
  out += ' ';
  append_op(out, p, i);
}

void append_program(std::string& out, const Program& p) {
  for (const Instr& i : p.instrs) {
    append_int(out, "r", p.rank.v);
    out += ' ';
    append_instr(out, p, i);
    out += '\n';
  }
}

}  // namespace

std::string to_text(const P2POp& op) {
  std::string out;
  append_p2p(out, op);
  return out;
}

std::string op_text(const Program& p, const Instr& i) {
  std::string out;
  append_op(out, p, i);
  return out;
}

std::string to_text(const Program& p, const Instr& i) {
  std::string out;
  append_instr(out, p, i);
  return out;
}

std::string to_line(const Program& p, const Instr& i) {
  std::string out;
  append_int(out, "r", p.rank.v);
  out += ' ';
  append_instr(out, p, i);
  return out;
}

std::string to_text_header(const ProgramSet& set) {
  const World& w = set.world;
  std::string out = "world";
  append_int(out, " pp=", w.pp);
  append_int(out, " vpp=", w.vpp);
  append_int(out, " shard=", w.shard);
  append_int(out, " replicate=", w.replicate);
  if (w.placement != Placement::LOOP) {  // written only when not the default (older texts stay valid)
    out += " placement=";
    out += to_string(w.placement);
  }
  out += w.expanded ? " expanded=1" : " expanded=0";
  out += " mode=";
  out += to_string(set.mode);
  out += " policy=";
  out += to_string(set.policy);
  return out;
}

std::string to_text(const ProgramSet& set) {
  std::string out = to_text_header(set) + '\n';
  for (const Program& p : set.programs) append_program(out, p);
  return out;
}

std::string to_text(const ProgramSet& set, Rank only) {
  for (const Program& p : set.programs) {
    if (p.rank != only) continue;
    std::string out = to_text_header(set) + '\n';
    append_program(out, p);
    return out;
  }
  throw std::invalid_argument("to_text: rank r" + std::to_string(only.v) +
                              " is not in the program set");
}

bool is_valid_stream_name(std::string_view name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z') return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

bool is_valid_event_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    bool printable = c > ' ' && c < 0x7f;
    if (!printable || c == ';' || c == '{' || c == '}') return false;
  }
  return true;
}

}  // namespace ppstream
