// The value cutter over JSON text read chunk by chunk (bytes from byte_source.h).
#include "json_stream.h"

#include <fmt/format.h>

#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze::detail {

JsonCursor::JsonCursor(ByteSource& src, size_t chunk) : src_(src), chunk_(chunk), buf_(chunk + kPadding) {}

bool JsonCursor::fill() {
  if (pos_ < end_) return true;
  base_ += end_;
  pos_ = end_ = 0;
  end_ = src_.read(buf_.data(), chunk_);
  refilled_ = true;
  return end_ > 0;
}

std::string_view JsonCursor::take_value_view(std::string& spill) {
  spill.clear();
  refilled_ = false;
  const size_t start = pos_;
  take_value(spill);
  if (!refilled_) return {buf_.data() + start, pos_ - start};  // buf_ has kPadding bytes past chunk_
  spill.reserve(spill.size() + kPadding);
  return spill;
}

int JsonCursor::peek() { return fill() ? static_cast<unsigned char>(buf_[pos_]) : -1; }

void JsonCursor::skip_ws() {
  for (int c = peek(); c == ' ' || c == '\n' || c == '\r' || c == '\t'; c = peek()) ++pos_;
}

std::string JsonCursor::take_string() {
  std::string raw;
  take_value(raw);
  if (raw.size() < 2 || raw.front() != '"') {
    throw TraceError(fmt::format("{}: byte {}: expected a string key", src_.path(), offset() - raw.size()));
  }
  return raw.substr(1, raw.size() - 2);
}

namespace {

// Bytes that end a run: inside a string ('"', '\\'), inside a container ('"' and brackets).
// The byte loop below handles what container_block leaves (a chunk's last 63 bytes, blocks with
// a backslash); a 16-byte SSE2 search for the next stop byte measured no faster than it (stop
// bytes come every few bytes inside event objects), the 64-byte bit masks did (docs/analyze.md
// "Cluster scale").
struct ByteSet {
  bool has[256] = {};
  constexpr explicit ByteSet(std::string_view chars) {
    for (char c : chars) has[static_cast<unsigned char>(c)] = true;
  }
};
constexpr ByteSet kInString("\"\\");
constexpr ByteSet kInContainer("\"{}[]");

size_t skip_until(const std::vector<char>& buf, size_t pos, size_t end, const ByteSet& set) {
  while (pos < end && !set.has[static_cast<unsigned char>(buf[pos])]) ++pos;
  return pos;
}

[[noreturn]] void mismatched(const std::string& path, uint64_t offset, char c, char expected_closer) {
  throw TraceError(fmt::format("{}: byte {}: '{}' closes a '{}'; malformed JSON", path, offset, c,
                               expected_closer == '}' ? '{' : '['));
}

#if defined(__SSE2__)
// One 64-byte block inside a container, 16 bytes per SSE2 compare (the bit masks of simdjson's
// stage 1): quotes, backslashes and brackets as bits; the bytes inside strings are the prefix
// XOR of the quote bits (a string runs from its opening quote to its closing one), so brackets
// outside strings are the only bits walked. A block holding a backslash is left to the byte
// loop (escapes are rare in traces). Returns how many bytes it consumed (0: not handled; 64:
// the whole block; less: the value ended there), updating `in_string` and `open`.
size_t container_block(const char* b, bool& in_string, std::string& open, const std::string& path,
                       uint64_t offset) {
  uint64_t quote = 0, backslash = 0, opener = 0, closer = 0;
  const auto bits = [](__m128i eq) { return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(eq))); };
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 * k));
    const int shift = 16 * k;
    quote |= bits(_mm_cmpeq_epi8(v, _mm_set1_epi8('"'))) << shift;
    backslash |= bits(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))) << shift;
    opener |= bits(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('{')), _mm_cmpeq_epi8(v, _mm_set1_epi8('[')))) << shift;
    closer |= bits(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('}')), _mm_cmpeq_epi8(v, _mm_set1_epi8(']')))) << shift;
  }
  if (backslash != 0) return 0;
  uint64_t inside = quote;  // prefix XOR: bit i = parity of the quotes at or before byte i
  for (int s = 1; s < 64; s *= 2) inside ^= inside << s;
  if (in_string) inside = ~inside;
  for (uint64_t br = (opener | closer) & ~inside; br != 0; br &= br - 1) {
    const auto i = static_cast<size_t>(__builtin_ctzll(br));
    const char c = b[i];
    if (c == '{' || c == '[') {
      open.push_back(c == '{' ? '}' : ']');
      continue;
    }
    if (open.back() != c) mismatched(path, offset + i, c, open.back());
    open.pop_back();
    if (open.empty()) return i + 1;
  }
  in_string = (inside >> 63) != 0;
  return 64;
}
#endif

}  // namespace

void JsonCursor::take_value(std::string& out) {
  std::string open;  // expected closers of the enclosing arrays/objects, innermost last
  bool in_string = false, escaped = false, started = false;
  if (peek() < 0) throw JsonCut{offset()};
  size_t start = pos_;
  for (;;) {
    if (pos_ == end_) {
      out.append(buf_.data() + start, pos_ - start);
      if (!fill()) throw JsonCut{offset()};
      start = pos_;
    }
#if defined(__SSE2__)
    if (!open.empty() && !escaped && end_ - pos_ >= 64) {
      const size_t n = container_block(buf_.data() + pos_, in_string, open, src_.path(), offset());
      pos_ += n;
      if (n != 0 && open.empty()) break;
      if (n != 0) continue;
    }
#endif
    if (in_string) {
      if (escaped) {  // the byte after a backslash (perhaps in the next chunk) is never a quote
        escaped = false;
        ++pos_;
        continue;
      }
      pos_ = skip_until(buf_, pos_, end_, kInString);
      if (pos_ == end_) continue;
      escaped = buf_[pos_] == '\\';
      in_string = escaped;
      ++pos_;
      if (!in_string && open.empty()) break;
      continue;
    }
    if (!open.empty()) {  // inside an object or array only quotes and brackets matter
      pos_ = skip_until(buf_, pos_, end_, kInContainer);
      if (pos_ == end_) continue;
    }
    const char c = buf_[pos_];
    if (c == '"') {
      in_string = started = true;
      ++pos_;
    } else if (c == '{' || c == '[') {
      open.push_back(c == '{' ? '}' : ']');
      started = true;
      ++pos_;
    } else if (c == '}' || c == ']') {
      if (open.empty()) {
        if (!started) {
          throw TraceError(fmt::format("{}: byte {}: '{}' where a JSON value was expected", src_.path(), offset(), c));
        }
        break;  // closes the enclosing container: the scalar ends here
      }
      if (open.back() != c) mismatched(src_.path(), offset(), c, open.back());
      open.pop_back();
      ++pos_;
      if (open.empty()) break;
    } else if (open.empty() && (c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ':')) {
      if (!started) {
        throw TraceError(fmt::format("{}: byte {}: '{}' where a JSON value was expected", src_.path(), offset(), c));
      }
      break;  // a scalar ends
    } else {
      started = true;
      ++pos_;
    }
  }
  out.append(buf_.data() + start, pos_ - start);
}

}  // namespace ppstream::analyze::detail
