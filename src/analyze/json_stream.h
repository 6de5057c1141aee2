// Reading a (possibly gzip-compressed) JSON file in bounded chunks: the readers never hold the
// whole decompressed file, only one chunk and the value being cut out of it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "byte_source.h"

namespace ppstream::analyze::detail {

// Thrown by JsonCursor when the file ends inside a value: the caller names what it was reading.
struct JsonCut {
  uint64_t end_offset = 0;  // the file's length in (decompressed) bytes
};

// A forward cursor over JSON text read chunk by chunk (kChunk bytes). It checks only what it
// needs to find where a value ends (strings, escapes, bracket nesting); values are parsed by
// simdjson once cut out.
class JsonCursor {
 public:
  static constexpr size_t kChunk = size_t{1} << 16;  // 64 KiB
  // `chunk`: bytes read at a time (a reader that looks at the first bytes only reads less).
  explicit JsonCursor(ByteSource& src, size_t chunk = kChunk);
  // Next byte without consuming it; -1 at the end of the file.
  int peek();
  // Consumes one byte (peek() must not be -1).
  void advance() { ++pos_; }
  // At the start of a file: consumes a UTF-8 byte-order mark (EF BB BF; RFC 8259 lets a reader
  // ignore one, some Windows tools write it). False when the file starts with 0xEF but no
  // mark (the byte that breaks it is next); true otherwise.
  bool skip_bom() {
    if (peek() != 0xEF) return true;
    for (int b : {0xEF, 0xBB, 0xBF}) {
      if (peek() != b) return false;
      advance();
    }
    return true;
  }
  void skip_ws();
  // The offset of the next byte in the (decompressed) file.
  uint64_t offset() const { return base_ + pos_; }
  // Appends the raw text of the JSON value starting at the next byte to `out` and consumes it.
  // Throws JsonCut at the end of the file, TraceError (naming the byte) at a mismatched bracket.
  void take_value(std::string& out);
  // The same, without a copy when it can: a view of the value inside the cursor's chunk when the
  // value lies in it (valid until the cursor moves on; at least kPadding readable bytes follow
  // it, as simdjson needs), else of `spill`, which then holds the value with that padding.
  std::string_view take_value_view(std::string& spill);
  static constexpr size_t kPadding = 64;  // >= simdjson::SIMDJSON_PADDING (checked where it is used)
  // The bytes of the current chunk from the next one on (empty at the end of the file): a reader
  // that finds a value's end itself (read_flat_event) reads the value there and consumes it with
  // skip(n) — no copy and no second pass over its bytes; a value the chunk cuts is left to
  // take_value_view.
  std::string_view chunk_rest() { return fill() ? std::string_view(buf_.data() + pos_, end_ - pos_) : std::string_view{}; }
  void skip(size_t n) { pos_ += n; }
  // Consumes a string token and returns its raw text between the quotes (escapes as written).
  std::string take_string();

 private:
  bool fill();  // more bytes after pos_; false at the end of the file
  bool refilled_ = false;  // take_value crossed a chunk boundary
  ByteSource& src_;
  size_t chunk_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t base_ = 0;  // file offset of buf_[0]
};

}  // namespace ppstream::analyze::detail
