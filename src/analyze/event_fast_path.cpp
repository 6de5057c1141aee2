// The scanner's fast path over an event's leading keys (event_fast_path.h).
#include "event_fast_path.h"

#include <algorithm>
#include <optional>

#include "json_input.h"

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
  for (;;) {
    ws();
    const auto key = plain_string();
    if (!key || (*key != "ph" && *key != "cat" && *key != "name")) return false;
    ws();
    if (p >= t.size() || t[p] != ':') return false;
    ++p;
    ws();
    const auto v = plain_string();
    if (!v) return false;
    if (*key == "ph") {
      const char ph = v->empty() ? '?' : v->front();
      if (ph != 'X' && ph != 'M') return true;
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
    while (p < t.size()) {
      const auto c = static_cast<unsigned char>(t[p]);
      if (c == '"') {
        out = t.substr(start, p - start);
        ++p;
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++p;
    }
    return false;
  }
  // A JSON number token: -?(0|[1-9][0-9]*)(.[0-9]+)? (no exponent); `integral` when it has no
  // fraction. At most 18 integer digits, so an integral one fits int64.
  bool number(std::string_view& out, bool& integral) {
    ws();
    const size_t start = p;
    if (p < t.size() && t[p] == '-') ++p;
    const size_t digits = p;
    while (p < t.size() && t[p] >= '0' && t[p] <= '9') ++p;
    const size_t n = p - digits;
    if (n == 0 || n > 18 || (n > 1 && t[digits] == '0')) return false;
    integral = true;
    if (p < t.size() && t[p] == '.') {
      const size_t frac = ++p;
      while (p < t.size() && t[p] >= '0' && t[p] <= '9') ++p;
      if (p == frac) return false;
      integral = false;
    }
    if (p < t.size() && (t[p] == 'e' || t[p] == 'E')) return false;
    out = t.substr(start, p - start);
    return true;
  }
  bool integer(int64_t& out) {
    std::string_view tok;
    bool integral = false;
    if (!number(tok, integral) || !integral) return false;
    const bool neg = tok.front() == '-';
    int64_t v = 0;
    for (char c : tok.substr(neg ? 1 : 0)) v = v * 10 + (c - '0');
    out = neg ? -v : v;
    return true;
  }
  // A value no field reads: a plain string, a number, true, false or null.
  bool scalar() {
    ws();
    if (p >= t.size()) return false;
    std::string_view s;
    bool integral = false;
    if (t[p] == '"') return plain_string(s);
    for (std::string_view word : {"true", "false", "null"}) {
      if (t.substr(p).starts_with(word)) {
        p += word.size();
        return true;
      }
    }
    return number(s, integral);
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

bool read_flat_args(const ScanSpec& spec, FlatCursor& c, RawArgs& a) {
  if (!c.eat('{')) return false;
  c.ws();
  if (c.p < c.t.size() && c.t[c.p] == '}') {
    ++c.p;
    return true;
  }
  bool closed = false;
  do {
    std::string_view key;
    if (!c.plain_string(key) || !c.eat(':')) return false;
    if (key == "name") {
      if (!c.plain_string(a.meta_name)) return false;
      continue;
    }
    const auto k = std::find_if(spec.args.begin(), spec.args.end(), [&](const ArgKey& x) { return x.key == key; });
    if (k == spec.args.end()) {
      if (!c.scalar()) return false;
    } else if (k->type == ArgKey::STRING) {
      if (!c.plain_string(a.str[k->slot])) return false;
    } else {
      int64_t v = 0;
      if (!c.integer(v)) return false;
      a.num[k->slot] = v;
    }
  } while (c.next(closed));
  return closed;
}

}  // namespace

bool read_flat_event(const ScanSpec& spec, std::string_view text, RawEvent& ev) {
  FlatCursor c{text};
  if (!c.eat('{')) return false;
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
    if (!c.plain_string(key) || !c.eat(':')) return false;
    if (key == "name") {
      if (!once(NAME) || !c.plain_string(ev.name)) return false;
    } else if (key == "cat") {
      if (!once(CAT) || !c.plain_string(ev.cat)) return false;
      if (listed(spec.host_categories, ev.cat) || (spec.link && listed(spec.link_categories, ev.cat))) return false;
    } else if (key == "ph") {
      if (!once(PH) || !c.plain_string(v)) return false;
      ev.ph = v.empty() ? '?' : v.front();
    } else if (key == "pid" || key == "tid") {
      int64_t n = 0;
      if (!once(key == "pid" ? PID : TID) || !c.integer(n)) return false;
      (key == "pid" ? ev.pid : ev.tid) = n;
    } else if (key == "ts" || key == "dur") {
      bool integral = false;
      if (!once(key == "ts" ? TS : DUR) || !c.number(v, integral)) return false;
      const auto ns = parse_us_to_ns(v);
      if (!ns) return false;  // the full parse names the key
      (key == "ts" ? ev.ts_ns : ev.dur_ns) = ns;
    } else if (key == "args") {
      if (!once(ARGS) || !read_flat_args(spec, c, ev.args)) return false;
    } else if (!c.scalar()) {
      return false;
    }
  } while (c.next(closed));
  c.ws();
  return closed && c.p == text.size();
}

}  // namespace ppstream::analyze::detail
