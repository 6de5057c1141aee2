// The scanner's fast path over an event's leading keys (event_fast_path.h).
#include "event_fast_path.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>

namespace ppstream::analyze::detail {

bool dropped_by_leading_keys(const ScanSpec& spec, std::string_view t) {
  size_t p = 1;  // after '{'
  const auto ws = [&] {
    while (p < t.size() && (t[p] == ' ' || t[p] == '\n' || t[p] == '\r' || t[p] == '\t')) ++p;
  };
  // A string without escapes at p: its text, p after its closing quote; nullopt otherwise.
  const auto plain_string = [&]() -> std::optional<std::string_view> {
    if (p >= t.size() || t[p] != '"') return std::nullopt;
    size_t q = p + 1;
    while (q < t.size() && t[q] != '"' && t[q] != '\\') ++q;
    if (q >= t.size() || t[q] != '"') return std::nullopt;
    const std::string_view v = t.substr(p + 1, q - p - 1);
    p = q + 1;
    return v;
  };
  bool named = false, host = false, link = false, kept = false;
  unsigned seen = 0;  // bits: ph, cat, name (a key given twice: the full parse names the error)
  for (;;) {
    ws();
    const auto key = plain_string();
    if (!key || (*key != "ph" && *key != "cat" && *key != "name")) return false;
    const unsigned bit = *key == "ph" ? 1u : *key == "cat" ? 2u : 4u;
    if (seen & bit) return false;
    seen |= bit;
    ws();
    if (p >= t.size() || t[p] != ':') return false;
    ++p;
    ws();
    const auto v = plain_string();
    if (!v) return false;
    if (*key == "ph") {
      const char ph = v->empty() ? '?' : v->front();
      if (ph != 'X' && ph != 'M' && !spec.every_phase) return !spec.may_claim(t);
    } else if (*key == "name") {
      named = true;
      kept = kept_name(spec, *v);
    } else {
      host = listed(spec.host_categories, *v);
      link = spec.link && listed(spec.link_categories, *v);
      if (!host || link) return false;  // device work and launches are parsed in full
    }
    if (named && host && !link && !kept) return true;
    ws();
    if (p >= t.size() || t[p] != ',') return false;
    ++p;
  }
}

}  // namespace ppstream::analyze::detail

namespace ppstream::analyze::detail {
namespace {

// Bytes a plain string holds as they are: printable ASCII but the quote and the backslash.
struct PlainBytes {
  bool ok[256] = {};
  constexpr PlainBytes() {
    for (int c = 0x20; c < 0x80; ++c) ok[c] = c != '"' && c != '\\';
  }
};
constexpr PlainBytes kPlain;

// The word tests below read the first byte as the lowest (x86-64, AArch64).
static_assert(std::endian::native == std::endian::little, "event_fast_path.cpp's word tests assume little-endian");

uint64_t load8(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t load4(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Word-at-a-time tests on 8 bytes (little-endian: the first byte is the lowest), SSE2-free
// (plain 64-bit arithmetic): the high bit of each byte that passes, exact for the lowest one (a
// borrow or carry only runs upward from a byte that passes itself), which is the one read.
constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
uint64_t zero_bytes(uint64_t x) { return (x - kOnes) & ~x & kHigh; }
// Bytes no ASCII digit.
uint64_t nondigit_bytes(uint64_t v) {
  const uint64_t a = v ^ (kOnes * '0');  // a digit: 0..9
  return ((a + kOnes * 0x76) | a) & kHigh;  // 0x76 + 10 = 0x80
}
// Bytes no plain string holds as they are (kPlain): '"', '\\', below 0x20, from 0x80.
uint64_t stop_bytes(uint64_t v) {
  return zero_bytes(v ^ (kOnes * '"')) | zero_bytes(v ^ (kOnes * '\\')) | ((v - kOnes * 0x20) & ~v & kHigh) | (v & kHigh);
}
size_t first_byte(uint64_t mask) { return static_cast<size_t>(__builtin_ctzll(mask)) / 8; }

// The value of n (1..8) ASCII digits at p (8 bytes readable): the eight-digit multiply of
// simdjson / fast_float, with the digits moved to the word's top (leading zeros).
uint64_t digits_value(const char* p, size_t n) {
  uint64_t v = (load8(p) ^ (kOnes * '0')) << (8 * (8 - n));
  v = v * 10 + (v >> 8);
  return (((v & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
          (((v >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >> 32;
}

// JSON whitespace.
struct WsBytes {
  bool ws[256] = {};
  constexpr WsBytes() { ws[' '] = ws['\n'] = ws['\r'] = ws['\t'] = true; }
};
constexpr WsBytes kWs;

// A cursor over one event's text for read_flat_event: every step returns false on anything it
// does not accept, and the caller then hands the event to the full parse.
struct FlatCursor {
  std::string_view t;
  size_t p = 0;

  void ws() {
    while (p < t.size() && kWs.ws[static_cast<unsigned char>(t[p])]) ++p;
  }
  // The end of the run of ASCII digits from q.
  size_t digits_end(size_t q) const {
    for (; t.size() - q >= 8; q += 8)
      if (const uint64_t m = nondigit_bytes(load8(t.data() + q))) return q + first_byte(m);
    while (q < t.size() && t[q] >= '0' && t[q] <= '9') ++q;
    return q;
  }
  bool eat(char c) {
    ws();
    if (p >= t.size() || t[p] != c) return false;
    ++p;
    return true;
  }
  // A string of printable ASCII without escapes (the bytes simdjson would take as they are).
  bool plain_string(std::string_view& out) {
    ws();
    if (p >= t.size() || t[p] != '"') return false;
    const size_t start = ++p;
    for (;;) {
      if (t.size() - p < 8) {
        while (p < t.size() && kPlain.ok[static_cast<unsigned char>(t[p])]) ++p;
        break;
      }
      if (const uint64_t m = stop_bytes(load8(t.data() + p))) {
        p += first_byte(m);
        break;
      }
      p += 8;
    }
    if (p >= t.size() || t[p] != '"') return false;
    out = t.substr(start, p - start);
    ++p;
    return true;
  }
  // A JSON number token: -?(0|[1-9][0-9]*)(.[0-9]+)? (no exponent), at most 18 integer digits:
  // its sign, integer part and fraction digits.
  struct Number {
    bool neg = false;
    int64_t whole = 0;
    std::string_view frac;  // empty: an integer
  };
  bool number(Number& n) {
    ws();
    n.neg = p < t.size() && t[p] == '-';
    if (n.neg) ++p;
    const size_t digits = p;
    p = digits_end(p);
    const size_t len = p - digits;
    if (len == 0 || len > 18 || (len > 1 && t[digits] == '0')) return false;
    const char* d = t.data() + digits;
    if (len > 8) {  // 9..18 digits: all of them readable 8 at a time
      n.whole = static_cast<int64_t>(digits_value(d, len - 8) * 100000000 + digits_value(d + len - 8, 8));
    } else if (t.size() - digits >= 8) {
      n.whole = static_cast<int64_t>(digits_value(d, len));
    } else {
      n.whole = 0;
      for (size_t i = 0; i < len; ++i) n.whole = n.whole * 10 + (d[i] - '0');
    }
    n.frac = {};
    if (p < t.size() && t[p] == '.') {
      const size_t frac = ++p;
      p = digits_end(p);
      if (p == frac) return false;
      n.frac = t.substr(frac, p - frac);
    }
    return p >= t.size() || (t[p] != 'e' && t[p] != 'E');
  }
  bool integer(int64_t& out) {
    Number n;
    if (!number(n) || !n.frac.empty()) return false;
    out = n.neg ? -n.whole : n.whole;
    return true;
  }
  // µs → ns as parse_us_to_ns (json_input.h) rounds: three decimals, half up on the fourth, the
  // rest ignored. False where parse_us_to_ns gives no value (the full parse names the key).
  bool us_ns(int64_t& out) {
    Number n;
    if (!number(n) || n.whole > (std::numeric_limits<int64_t>::max() - 1000) / 1000) return false;
    int64_t frac = 0;
    for (size_t i = 0; i < 3; ++i) frac = frac * 10 + (i < n.frac.size() ? n.frac[i] - '0' : 0);
    if (n.frac.size() > 3 && n.frac[3] >= '5') ++frac;
    const int64_t ns = n.whole * 1000 + frac;
    out = n.neg ? -ns : ns;
    return true;
  }
  // A value no field reads: a plain string, a number, true, false or null.
  bool scalar() {
    ws();
    if (p >= t.size()) return false;
    if (t[p] == '"') {
      std::string_view s;
      return plain_string(s);
    }
    for (std::string_view word : {"true", "false", "null"}) {
      if (t.substr(p).starts_with(word)) {
        p += word.size();
        return true;
      }
    }
    Number n;
    return number(n);
  }
  // After a member: ',' (true) or the object's '}' (false, `closed` set).
  bool next(bool& closed) {
    ws();
    if (p < t.size() && t[p] == ',') {
      ++p;
      return true;
    }
    closed = p < t.size() && t[p] == '}';
    if (closed) ++p;
    return false;
  }
};

bool cat_refused(const ScanSpec& spec, std::string_view cat) {
  return listed(spec.host_categories, cat) || (spec.link && listed(spec.link_categories, cat));
}

// key == word, with a compare of the word's fixed length (no memcmp call).
template <size_t N>
bool is(std::string_view key, const char (&word)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), word, N - 1) == 0;
}

// Marks where each value starts and ends (a ShapeRecorder); a no-op when null.
struct Marks {
  ShapeRecorder* rec;
  void value(size_t at, ShapeField field, uint8_t slot = 0) const {
    if (rec) rec->value(at, field, slot);
  }
  void end(size_t at) const {
    if (rec) rec->end(at);
  }
};

bool read_flat_args(const ScanSpec& spec, FlatCursor& c, RawArgs& a, const Marks& m) {
  if (!c.eat('{')) return false;
  c.ws();
  if (c.p < c.t.size() && c.t[c.p] == '}') {
    ++c.p;
    return true;
  }
  bool closed = false, named = false;
  uint32_t str_given = 0;  // slots of STRING keys read (INT ones: a.num_given)
  do {
    std::string_view key;
    if (!c.plain_string(key) || !c.eat(':')) return false;
    if (is(key, "name")) {
      m.value(c.p, ShapeField::META_NAME);
      if (named || !c.plain_string(a.meta_name)) return false;  // twice: the full parse names it
      m.end(c.p);
      named = true;
      continue;
    }
    const ArgKey* k = spec.find_arg(key);
    // A slot filled twice (one key twice, or two of its spellings): the full parse decides.
    if (k && (((k->type == ArgKey::STRING ? str_given : a.num_given) >> k->slot) & 1u)) return false;
    if (!k) {
      m.value(c.p, ShapeField::SCALAR);
      if (!c.scalar()) return false;
    } else if (k->type == ArgKey::STRING) {
      m.value(c.p, ShapeField::ARG_STR, k->slot);
      str_given |= 1u << k->slot;
      if (!c.plain_string(a.str[k->slot])) return false;
    } else {
      m.value(c.p, ShapeField::ARG_INT, k->slot);
      int64_t v = 0;
      if (!c.integer(v)) return false;
      a.num[k->slot] = v;
      a.num_given |= 1u << k->slot;
    }
    m.end(c.p);
  } while (c.next(closed));
  return closed;
}

}  // namespace

size_t read_flat_event(const ScanSpec& spec, std::string_view text, RawEvent& ev) {
  return read_flat_event(spec, text, ev, nullptr);
}

size_t read_flat_event(const ScanSpec& spec, std::string_view text, RawEvent& ev, ShapeRecorder* rec) {
  FlatCursor c{text};
  const Marks m{rec};
  if (!c.eat('{')) return 0;
  enum : unsigned { NAME = 1, CAT = 2, PH = 4, PID = 8, TID = 16, TS = 32, DUR = 64, ARGS = 128 };
  unsigned seen = 0;
  const auto once = [&](unsigned bit) {
    if (seen & bit) return false;
    seen |= bit;
    return true;
  };
  bool closed = false;
  do {
    std::string_view key, v;
    if (!c.plain_string(key) || !c.eat(':')) return 0;
    int64_t n = 0;
    if (is(key, "name")) {
      m.value(c.p, ShapeField::NAME);
      if (!once(NAME) || !c.plain_string(ev.name)) return 0;
    } else if (is(key, "ts") || is(key, "dur")) {
      const bool ts = key.size() == 2;
      m.value(c.p, ts ? ShapeField::TS : ShapeField::DUR);
      if (!once(ts ? TS : DUR) || !c.us_ns(n)) return 0;
      (ts ? ev.ts_ns : ev.dur_ns) = n;
    } else if (is(key, "pid") || is(key, "tid")) {
      const bool pid = key[0] == 'p';
      m.value(c.p, pid ? ShapeField::PID : ShapeField::TID);
      if (!once(pid ? PID : TID) || !c.integer(n)) return 0;
      (pid ? ev.pid : ev.tid) = n;
    } else if (is(key, "ph")) {
      m.value(c.p, ShapeField::PH);
      if (!once(PH) || !c.plain_string(v)) return 0;
      ev.ph = v.empty() ? '?' : v.front();
    } else if (is(key, "args")) {
      if (!once(ARGS) || !read_flat_args(spec, c, ev.args, m)) return 0;
      continue;  // its values are marked one by one
    } else if (is(key, "cat")) {
      m.value(c.p, ShapeField::CAT);
      if (!once(CAT) || !c.plain_string(ev.cat)) return 0;
      if (cat_refused(spec, ev.cat)) return 0;
    } else {
      m.value(c.p, ShapeField::SCALAR);
      if (!c.scalar()) return 0;
    }
    m.end(c.p);
  } while (c.next(closed));
  if (!closed) return 0;
  if (rec) rec->finish(c.p);  // the text after the last value
  return c.p;
}

namespace {

// a[0, n) == b[0, n), by words (overlapping at the end), never reading past n. Inlined: a call
// per literal cost as much as the compare (callgrind).
[[gnu::always_inline]] inline bool same_bytes(const char* a, const char* b, size_t n) {
  if (n >= 8) {
    for (size_t i = 0; i + 8 < n; i += 8)
      if (load8(a + i) != load8(b + i)) return false;
    return load8(a + n - 8) == load8(b + n - 8);
  }
  if (n >= 4) return load4(a) == load4(b) && load4(a + n - 4) == load4(b + n - 4);
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// `t` read by shape `s`: its length, `ev` filled as read_flat_event fills it; 0 at the first
// byte that differs from the shape's literal text or a value its parser refuses.
size_t match(EventShape& s, const ScanSpec& spec, std::string_view t, RawEvent& ev) {
  FlatCursor c{t};
  const char* lits = s.lits.data();
  for (const EventShape::Part& part : s.parts) {
    if (part.len > t.size() - c.p || !same_bytes(t.data() + c.p, lits + part.lit, part.len)) return 0;
    c.p += part.len;
    int64_t n = 0;
    std::string_view v;
    switch (part.field) {
      case ShapeField::NAME:
        if (!c.plain_string(ev.name)) return 0;
        break;
      case ShapeField::CAT:
        if (!c.plain_string(ev.cat)) return 0;
        if (!s.cat_checked || ev.cat != s.cat) {  // as read_flat_event checks it
          if (cat_refused(spec, ev.cat)) return 0;
          s.cat.assign(ev.cat);
          s.cat_checked = true;
        }
        break;
      case ShapeField::PH:
        if (!c.plain_string(v)) return 0;
        ev.ph = v.empty() ? '?' : v.front();
        break;
      case ShapeField::PID:
      case ShapeField::TID:
        if (!c.integer(n)) return 0;
        (part.field == ShapeField::PID ? ev.pid : ev.tid) = n;
        break;
      case ShapeField::TS:
      case ShapeField::DUR:
        if (!c.us_ns(n)) return 0;
        (part.field == ShapeField::TS ? ev.ts_ns : ev.dur_ns) = n;
        break;
      case ShapeField::META_NAME:
        if (!c.plain_string(ev.args.meta_name)) return 0;
        break;
      case ShapeField::ARG_STR:
        if (!c.plain_string(ev.args.str[part.slot])) return 0;
        break;
      case ShapeField::ARG_INT:
        if (!c.integer(n)) return 0;
        ev.args.num[part.slot] = n;
        ev.args.num_given |= 1u << part.slot;
        break;
      case ShapeField::SCALAR:
        if (!c.scalar()) return 0;
        break;
      case ShapeField::END:
        return c.p;
    }
  }
  return 0;
}

}  // namespace

size_t EventShapes::read(const ScanSpec& spec, std::string_view text, RawEvent& ev) {
  for (size_t k = 0; k < n_; ++k) {
    const size_t i = k == 0 ? last_ : k == last_ ? 0 : k;  // the last one to match first
    if (const size_t len = match(shapes_[i], spec, text, ev)) {
      last_ = i;
      ++matched_;
      return len;
    }
    const size_t index = ev.index, offset = ev.offset;  // as read_flat_event takes it
    ev = RawEvent{};
    ev.index = index;
    ev.offset = offset;
  }
  // Shapes stop being learned in a file whose events do not repeat them (each would cost a record).
  const bool learn = learned_ < 2 * kShapes || matched_ >= 4 * learned_;
  ShapeRecorder rec{text};
  const size_t len = read_flat_event(spec, text, ev, learn ? &rec : nullptr);
  if (len == 0 || !learn) return len;
  shapes_[next_] = std::move(rec.shape);
  last_ = next_;
  next_ = (next_ + 1) % kShapes;
  n_ = std::max(n_, last_ + 1);
  ++learned_;
  return len;
}

}  // namespace ppstream::analyze::detail
