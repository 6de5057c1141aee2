// Plain and gzip trace files as one byte stream (byte_source.h), inflated with ISA-L.
#include "byte_source.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <isa-l/igzip_lib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze::detail {

namespace {

constexpr size_t kInput = size_t{1} << 15;  // compressed bytes read at a time

const char* isal_reason(int rc) {
  switch (rc) {
    case ISAL_INVALID_BLOCK: return "invalid deflate block";
    case ISAL_INVALID_SYMBOL: return "invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK: return "invalid back-reference distance";
    case ISAL_INVALID_WRAPPER: return "invalid gzip header";
    case ISAL_UNSUPPORTED_METHOD: return "unsupported compression method";
    case ISAL_INCORRECT_CHECKSUM: return "CRC-32 mismatch";
    case ISAL_NEED_DICT: return "the stream needs a preset dictionary";
    default: return "unknown inflate error";
  }
}

}  // namespace

struct ByteSource::Gzip {
  inflate_state state{};
  std::vector<uint8_t> in = std::vector<uint8_t>(kInput);
  uint64_t in_base = 0;     // file offset of in[0]
  bool file_ended = false;  // read() returned 0
};

ByteSource::ByteSource(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw TraceError(fmt::format("{}: cannot open file ({})", path, std::strerror(errno)));
  uint8_t magic[2] = {};
  size_t got = 0;
  try {
    while (got < 2) {
      const size_t n = read_raw(magic + got, 2 - got);
      if (n == 0) break;
      got += n;
    }
  } catch (...) {
    ::close(fd_);
    throw;
  }
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    gz_ = std::make_unique<Gzip>();
    isal_inflate_init(&gz_->state);
    gz_->state.crc_flag = ISAL_GZIP;
  }
  if (::lseek(fd_, 0, SEEK_SET) != 0) {
    ::close(fd_);
    throw TraceError(fmt::format("{}: cannot seek to the start ({})", path, std::strerror(errno)));
  }
}

ByteSource::~ByteSource() { ::close(fd_); }

size_t ByteSource::read_raw(uint8_t* dst, size_t n) {
  for (;;) {
    const ssize_t got = ::read(fd_, dst, n);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) throw TraceError(fmt::format("{}: cannot read ({})", path_, std::strerror(errno)));
  }
}

size_t ByteSource::read(char* dst, size_t n) {
  const size_t got = gz_ ? inflate(dst, n) : read_raw(reinterpret_cast<uint8_t*>(dst), n);
  produced_ += got;
  return got;
}

bool ByteSource::refill() {
  Gzip& g = *gz_;
  inflate_state& s = g.state;
  if (g.file_ended) return false;
  // Keep the unread bytes (a member boundary may fall inside them) and append after them.
  const size_t keep = s.avail_in;
  const size_t consumed = static_cast<size_t>(s.next_in - g.in.data());
  if (s.next_in != nullptr && consumed > 0) std::memmove(g.in.data(), s.next_in, keep);
  if (s.next_in != nullptr) g.in_base += consumed;
  const size_t got = read_raw(g.in.data() + keep, g.in.size() - keep);
  if (got == 0) g.file_ended = true;
  s.next_in = g.in.data();
  s.avail_in = static_cast<uint32_t>(keep + got);
  return got > 0;
}

void ByteSource::corrupt(const char* reason) const {
  throw TraceError(fmt::format("{}: byte {} of the decompressed stream: gzip error: {} (the file is truncated or "
                               "corrupt)",
                               path_, produced_, reason));
}

size_t ByteSource::inflate(char* dst, size_t n) {
  if (n == 0) return 0;
  inflate_state& s = gz_->state;
  s.next_out = reinterpret_cast<uint8_t*>(dst);
  s.avail_out = static_cast<uint32_t>(std::min<size_t>(n, UINT32_MAX));
  const uint32_t want = s.avail_out;
  for (;;) {
    if (s.block_state == ISAL_BLOCK_FINISH) {  // a member ended: the file ends, or another member starts
      while (s.avail_in < 2 && refill()) {
      }
      if (s.avail_in == 0) return 0;
      if (s.avail_in < 2 || s.next_in[0] != 0x1f || s.next_in[1] != 0x8b) {
        throw TraceError(fmt::format("{}: byte {} of the file: data after the end of the gzip stream ({} "
                                     "decompressed bytes); expected the end of the file or another gzip member",
                                     path_, gz_->in_base + static_cast<uint64_t>(s.next_in - gz_->in.data()),
                                     produced_));
      }
      // A fresh state for the next member, on the same input and output positions.
      uint8_t* const next_in = s.next_in;
      uint8_t* const next_out = s.next_out;
      const uint32_t avail_in = s.avail_in, avail_out = s.avail_out;
      isal_inflate_reset(&s);
      s.crc_flag = ISAL_GZIP;
      s.next_in = next_in;
      s.avail_in = avail_in;
      s.next_out = next_out;
      s.avail_out = avail_out;
    }
    if (s.avail_in == 0 && !refill() && s.block_state != ISAL_BLOCK_FINISH) {
      // No input left. ISA-L may still hold decoded bytes; one call with no input flushes them.
      const uint32_t before = s.avail_out;
      const int rc = isal_inflate(&s);
      if (rc < 0) corrupt(isal_reason(rc));
      if (s.avail_out != before || s.block_state == ISAL_BLOCK_FINISH) return want - s.avail_out;
      corrupt("unexpected end of file");
    }
    const uint32_t in_before = s.avail_in;
    const int state_before = s.block_state;
    const int rc = isal_inflate(&s);
    if (rc < 0) corrupt(isal_reason(rc));
    if (s.avail_out != want) return want - s.avail_out;
    // Input left, nothing consumed or produced, state unchanged: stop rather than spin.
    if (s.avail_in != 0 && s.avail_in == in_before && s.block_state == state_before) corrupt("inflate made no progress");
  }
}

}  // namespace ppstream::analyze::detail
