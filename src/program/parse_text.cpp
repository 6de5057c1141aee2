// Parser of the canonical program text (grammar in format.h). Hand-written over string_view:
// golden files and expanded sets can hold millions of lines, and every error must name the
// line and the offending token.
#include <charconv>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "ppstream/program/format.h"
#include "ppstream/program/name_index.h"

namespace ppstream {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool ends_word(char c) { return is_blank(c) || c == ';' || c == '{' || c == '}'; }

// Reads the tokens of one line; every failure throws ParseError naming origin:line.
class LineScanner {
 public:
  LineScanner(std::string_view line, const std::string& origin, int line_no)
      : line_(line), origin_(origin), line_no_(line_no) {}

  [[noreturn]] void fail(std::string_view expected, std::string_view got) const {
    std::string msg = origin_ + ":" + std::to_string(line_no_) + ": expected ";
    msg += expected;
    msg += ", got ";
    if (got.empty()) {
      msg += "end of line";
    } else {
      msg += '\'';
      msg += got;
      msg += '\'';
    }
    throw ParseError(msg);
  }

  // A failure that is not a token mismatch (e.g. sizes that do not fit together).
  [[noreturn]] void fail_with(const std::string& what) const {
    throw ParseError(origin_ + ":" + std::to_string(line_no_) + ": " + what);
  }

  void skip_blanks() {
    while (pos_ < line_.size() && is_blank(line_[pos_])) ++pos_;
  }
  bool at_end() {
    skip_blanks();
    return pos_ >= line_.size();
  }
  // Next run of characters up to a blank or one of ;{} (empty at such a character).
  std::string_view word() {
    skip_blanks();
    size_t start = pos_;
    while (pos_ < line_.size() && !ends_word(line_[pos_])) ++pos_;
    return line_.substr(start, pos_ - start);
  }
  // Next run of characters up to a blank (for event names, whose errors show the whole token).
  std::string_view token() {
    skip_blanks();
    size_t start = pos_;
    while (pos_ < line_.size() && !is_blank(line_[pos_])) ++pos_;
    return line_.substr(start, pos_ - start);
  }
  // What an error shows when the expected word is missing: the rest of the token, if any.
  std::string_view peek_token() {
    skip_blanks();
    size_t end = pos_;
    while (end < line_.size() && !is_blank(line_[end])) ++end;
    return line_.substr(pos_, end - pos_);
  }
  bool consume(char c) {
    skip_blanks();
    if (pos_ < line_.size() && line_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect_end() {
    if (!at_end()) fail("end of line", line_.substr(pos_));
  }

  // "<prefix><digits>" → the number; `what` describes the expectation in errors.
  int32_t prefixed_int(std::string_view prefix, std::string_view what) {
    std::string_view w = word();
    if (w.empty()) fail(what, peek_token());
    if (w.substr(0, prefix.size()) != prefix) fail(what, w);
    auto n = parse_uint(w.substr(prefix.size()));
    if (!n) fail(what, w);
    return *n;
  }

  // Non-negative decimal int32, digits only.
  static std::optional<int32_t> parse_uint(std::string_view digits) {
    if (digits.empty() || digits[0] < '0' || digits[0] > '9') return std::nullopt;
    int32_t v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    return v;
  }

 private:
  std::string_view line_;
  size_t pos_ = 0;
  const std::string& origin_;
  int line_no_;
};

constexpr std::string_view kMb = "mb<microbatch> (e.g. mb3)";
constexpr std::string_view kStage = "s<stage> (e.g. s7)";

P2POp parse_p2p(LineScanner& sc) {
  P2POp op;
  std::string_view kind = sc.word();
  auto k = parse_p2p_kind(std::string(kind));
  if (!k) sc.fail("a P2P op (SEND_F, RECV_F, SEND_B, RECV_B)", kind.empty() ? sc.peek_token() : kind);
  op.kind = *k;
  op.mb = Microbatch{sc.prefixed_int("mb", kMb)};
  op.stage = Stage{sc.prefixed_int("s", kStage)};
  bool send = is_send(op.kind);
  std::string_view arrow = send ? "->r" : "<-r";
  std::string what = std::string(send ? "'->r<peer>' after " : "'<-r<peer>' after ") + to_string(op.kind);
  op.peer = Rank{sc.prefixed_int(arrow, what)};
  return op;
}

// An optional " bucket<j>/<k>" (B, W, REDUCE_GRAD; j < k, k >= 2: the whole stage is written
// without it, so each instruction has one spelling). I and F are never split.
void parse_bucket(LineScanner& sc, Instr& in) {
  if (sc.at_end()) return;
  constexpr std::string_view kBucket = "bucket<j>/<k> with 0 <= j < k, k >= 2 (e.g. bucket0/2) or end of line";
  std::string_view w = sc.word();
  if (in.op != OpKind::B && in.op != OpKind::W && in.op != OpKind::REDUCE_GRAD) sc.fail("end of line", w);
  const size_t slash = w.find('/');
  if (w.substr(0, 6) != "bucket" || slash == std::string_view::npos) sc.fail(kBucket, w);
  const auto j = LineScanner::parse_uint(w.substr(6, slash - 6));
  const auto k = LineScanner::parse_uint(w.substr(slash + 1));
  if (!j || !k || *k < 2 || *j >= *k) sc.fail(kBucket, w);
  in.bucket = Bucket{*j, *k};
}

// "ALL_REDUCE <group>[r<first>(..r<last>(:<stride>)?)?]" (format.h).
Collective parse_collective(LineScanner& sc) {
  Collective c;
  std::string_view kind = sc.word();
  auto k = parse_collective_type(std::string(kind));
  if (!k) sc.fail("a collective op (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER)", kind.empty() ? sc.peek_token() : kind);
  c.op = *k;
  constexpr std::string_view kWhat = "a group '<name>[r<first>..r<last>:<stride>]' (e.g. clip[r0..r63], emb[r0..r12:12], solo[r5])";
  const std::string_view tok = sc.token();
  const size_t open = tok.find('[');
  if (open == std::string_view::npos || tok.back() != ']' || !is_valid_stream_name(tok.substr(0, open))) sc.fail(kWhat, tok);
  c.group = std::string(tok.substr(0, open));
  std::string_view body = tok.substr(open + 1, tok.size() - open - 2);
  auto rank_at = [&](std::string_view r) -> int32_t {
    if (r.empty() || r[0] != 'r') sc.fail(kWhat, tok);
    auto n = LineScanner::parse_uint(r.substr(1));
    if (!n) sc.fail(kWhat, tok);
    return *n;
  };
  const size_t dots = body.find("..");
  if (dots == std::string_view::npos) {
    c.first = Rank{rank_at(body)};
    return c;
  }
  c.first = Rank{rank_at(body.substr(0, dots))};
  std::string_view rest = body.substr(dots + 2);
  const size_t colon = rest.find(':');
  const int32_t last = rank_at(rest.substr(0, colon));
  if (colon != std::string_view::npos) {
    auto st = LineScanner::parse_uint(rest.substr(colon + 1));
    if (!st || *st < 1) sc.fail(kWhat, tok);
    c.stride = *st;
  }
  if (last <= c.first.v || (last - c.first.v) % c.stride != 0)
    sc.fail_with("group " + std::string(tok) + ": the last member must lie above the first by a multiple of the stride");
  c.count = (last - c.first.v) / c.stride + 1;
  return c;
}

// A program being read, with the indexes of its name tables.
struct RankBuild {
  Program p;
  NameIndex<StreamId> streams;
  NameIndex<EventId> events;
};

// "<stream> <op> <args>" → an instruction of `rb.p`, its stream interned in its table.
Instr parse_op(LineScanner& sc, RankBuild& rb) {
  Instr in;
  std::string_view stream = sc.word();
  if (!is_valid_stream_name(stream))
    sc.fail("a stream name [a-z][a-z0-9_.]*", stream.empty() ? sc.peek_token() : stream);
  in.stream = rb.streams.intern(rb.p.stream_names, stream);
  std::string_view op = sc.word();
  auto kind = parse_op_kind(std::string(op));
  if (!kind)
    sc.fail("an op (F, B, I, W, BATCH, RECORD, WAIT, UNSHARD, RESHARD, REDUCE_GRAD, OPT_STEP, COLLECTIVE)",
            op.empty() ? sc.peek_token() : op);
  in.op = *kind;
  switch (in.op) {
    case OpKind::F:
    case OpKind::B:
    case OpKind::I:
    case OpKind::W:
      in.mb = Microbatch{sc.prefixed_int("mb", kMb)};
      in.stage = Stage{sc.prefixed_int("s", kStage)};
      parse_bucket(sc, in);
      break;
    case OpKind::BATCH:
      if (!sc.consume('{')) sc.fail("'{' after BATCH", sc.peek_token());
      for (;;) {
        in.p2p.push_back(parse_p2p(sc));
        if (sc.consume('}')) break;
        if (!sc.consume(';')) sc.fail("';' or '}' after a P2P op", sc.peek_token());
      }
      break;
    case OpKind::RECORD:
    case OpKind::WAIT: {
      std::string_view ev = sc.token();
      if (!is_valid_event_name(ev)) sc.fail("an event name (printable, no spaces or ;{})", ev);
      in.event = rb.events.intern(rb.p.event_names, ev);
      break;
    }
    case OpKind::UNSHARD:
    case OpKind::RESHARD:
    case OpKind::REDUCE_GRAD:
      in.stage = Stage{sc.prefixed_int("s", kStage)};
      parse_bucket(sc, in);
      break;
    case OpKind::OPT_STEP:
      break;
    case OpKind::COLLECTIVE:
      in.coll = rb.p.intern_collective(parse_collective(sc));
      break;
  }
  sc.expect_end();
  return in;
}

// "r<rank> <stream> <op> <args>": appends the instruction to its rank's program in `by_rank`.
void parse_line(LineScanner& sc, std::map<int32_t, RankBuild>& by_rank) {
  Rank r{sc.prefixed_int("r", "r<rank> (e.g. r3) or 'world'")};
  RankBuild& rb = by_rank[r.v];
  rb.p.rank = r;
  Instr in = parse_op(sc, rb);
  rb.p.instrs.push_back(std::move(in));
}

// "<key>=<value>" with the key required in this position of the header.
std::string_view header_value(LineScanner& sc, std::string_view key, std::string_view what) {
  std::string_view w = sc.word();
  if (w.size() <= key.size() || w.substr(0, key.size()) != key || w[key.size()] != '=')
    sc.fail(what, w.empty() ? sc.peek_token() : w);
  return w.substr(key.size() + 1);
}

int32_t header_int(LineScanner& sc, std::string_view key) {
  std::string what = std::string(key) + "=<integer >= 1>";
  std::string_view v = header_value(sc, key, what);
  auto n = LineScanner::parse_uint(v);
  if (!n || *n < 1) sc.fail(what, std::string(key) + "=" + std::string(v));
  return *n;
}

void parse_header(LineScanner& sc, ProgramSet& set) {
  sc.word();  // "world", checked by the caller
  World& w = set.world;
  w.pp = header_int(sc, "pp");
  w.vpp = header_int(sc, "vpp");
  w.shard = header_int(sc, "shard");
  w.replicate = header_int(sc, "replicate");
  if (sc.peek_token().substr(0, 10) == "placement=") {  // optional; absent = loop
    std::string_view pl = header_value(sc, "placement", "placement=loop|v");
    auto parsed = parse_placement(std::string(pl));
    if (!parsed) sc.fail("placement=loop|v", "placement=" + std::string(pl));
    w.placement = *parsed;
  }
  if (auto e = world_size_error(w)) sc.fail_with(*e);
  std::string_view exp = header_value(sc, "expanded", "expanded=0|1");
  if (exp != "0" && exp != "1") sc.fail("expanded=0|1", "expanded=" + std::string(exp));
  w.expanded = exp == "1";
  std::string_view mode = header_value(sc, "mode", "mode=none|fsdp|hsdp");
  auto m = parse_dp_mode(std::string(mode));
  if (!m) sc.fail("mode=none|fsdp|hsdp", "mode=" + std::string(mode));
  set.mode = *m;
  std::string_view policy = header_value(sc, "policy", "policy=none|inline|async");
  auto p = parse_reduce_policy(std::string(policy));
  if (!p) sc.fail("policy=none|inline|async", "policy=" + std::string(policy));
  if ((*p == ReducePolicy::NONE) != (set.mode == DPMode::NONE))
    sc.fail(set.mode == DPMode::NONE ? "policy=none with mode=none" : "policy=inline|async with a DP mode",
            "policy=" + std::string(policy));
  set.policy = *p;
  sc.expect_end();
}

}  // namespace

Program parse_instr_line(const std::string& line, const std::string& origin, int line_no) {
  LineScanner sc(line, origin, line_no);
  std::map<int32_t, RankBuild> one;
  parse_line(sc, one);
  return std::move(one.begin()->second.p);
}

ProgramSet parse_program_set(const std::string& text, const std::string& origin) {
  ProgramSet set;
  bool have_header = false;
  std::map<int32_t, RankBuild> by_rank;  // sorted by rank as the set requires
  std::string_view rest = text;
  int line_no = 0;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    LineScanner sc(line, origin, line_no);
    if (sc.at_end()) continue;
    std::string_view first = sc.peek_token();
    if (first[0] == '#') continue;
    if (first == "world") {
      if (have_header) sc.fail("one 'world' line per program set", "world (a second one)");
      parse_header(sc, set);
      have_header = true;
      continue;
    }
    if (!have_header) sc.fail("the 'world pp=… policy=…' line before any instruction", first);
    parse_line(sc, by_rank);
  }
  if (!have_header)
    throw ParseError(origin + ":" + std::to_string(line_no + 1) +
                     ": expected a 'world pp=… policy=…' line, got end of input");
  set.programs.reserve(by_rank.size());
  for (auto& [r, rb] : by_rank) {
    rb.p.pp_rank = pp_rank_of(rb.p.rank, set.world);
    set.programs.push_back(std::move(rb.p));
  }
  return set;
}

}  // namespace ppstream
