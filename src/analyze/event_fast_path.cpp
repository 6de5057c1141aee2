// The scanner's fast path over an event's leading keys (event_fast_path.h).
#include "event_fast_path.h"

#include <algorithm>
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

// A cursor over one event's text for read_flat_event: every step returns false on anything it
// does not accept, and the caller then hands the event to the full parse.
struct FlatCursor {
  std::string_view t;
  size_t p = 0;

  void ws() {
    while (p < t.size() && (t[p] == ' ' || t[p] == '\n' || t[p] == '\r' || t[p] == '\t')) ++p;
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
    while (p < t.size() && kPlain.ok[static_cast<unsigned char>(t[p])]) ++p;
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
    while (p < t.size() && t[p] >= '0' && t[p] <= '9') ++p;
    const size_t len = p - digits;
    if (len == 0 || len > 18 || (len > 1 && t[digits] == '0')) return false;
    n.whole = 0;
    for (size_t i = digits; i < p; ++i) n.whole = n.whole * 10 + (t[i] - '0');
    n.frac = {};
    if (p < t.size() && t[p] == '.') {
      const size_t frac = ++p;
      while (p < t.size() && t[p] >= '0' && t[p] <= '9') ++p;
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

// key == word, with a compare of the word's fixed length (no memcmp call).
template <size_t N>
bool is(std::string_view key, const char (&word)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), word, N - 1) == 0;
}

bool read_flat_args(const ScanSpec& spec, FlatCursor& c, RawArgs& a) {
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
      if (named || !c.plain_string(a.meta_name)) return false;  // twice: the full parse names it
      named = true;
      continue;
    }
    const ArgKey* k = spec.find_arg(key);
    // A slot filled twice (one key twice, or two of its spellings): the full parse decides.
    if (k && (((k->type == ArgKey::STRING ? str_given : a.num_given) >> k->slot) & 1u)) return false;
    if (!k) {
      if (!c.scalar()) return false;
    } else if (k->type == ArgKey::STRING) {
      str_given |= 1u << k->slot;
      if (!c.plain_string(a.str[k->slot])) return false;
    } else {
      int64_t v = 0;
      if (!c.integer(v)) return false;
      a.num[k->slot] = v;
      a.num_given |= 1u << k->slot;
    }
  } while (c.next(closed));
  return closed;
}

}  // namespace

size_t read_flat_event(const ScanSpec& spec, std::string_view text, RawEvent& ev) {
  FlatCursor c{text};
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
      if (!once(NAME) || !c.plain_string(ev.name)) return 0;
    } else if (is(key, "ts") || is(key, "dur")) {
      const bool ts = key.size() == 2;
      if (!once(ts ? TS : DUR) || !c.us_ns(n)) return 0;
      (ts ? ev.ts_ns : ev.dur_ns) = n;
    } else if (is(key, "pid") || is(key, "tid")) {
      const bool pid = key[0] == 'p';
      if (!once(pid ? PID : TID) || !c.integer(n)) return 0;
      (pid ? ev.pid : ev.tid) = n;
    } else if (is(key, "ph")) {
      if (!once(PH) || !c.plain_string(v)) return 0;
      ev.ph = v.empty() ? '?' : v.front();
    } else if (is(key, "args")) {
      if (!once(ARGS) || !read_flat_args(spec, c, ev.args)) return 0;
    } else if (is(key, "cat")) {
      if (!once(CAT) || !c.plain_string(ev.cat)) return 0;
      if (listed(spec.host_categories, ev.cat) || (spec.link && listed(spec.link_categories, ev.cat))) return 0;
    } else if (!c.scalar()) {
      return 0;
    }
  } while (c.next(closed));
  return closed ? c.p : 0;
}

}  // namespace ppstream::analyze::detail
