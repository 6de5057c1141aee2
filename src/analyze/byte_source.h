// The bytes of a trace file, decompressed on the fly when it is gzip (RFC 1952), read in
// bounded pieces. A file is gzip when it starts with the gzip magic bytes 1f 8b, whatever its
// name; any other file is read as it is.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace ppstream::analyze::detail {

// Inflates with ISA-L (igzip, Debian libisal: about 3× zlib's speed on our Kineto samples,
// docs/analyze.md "Bench"). Concatenated gzip members are read one after the other, as
// gunzip does. Throws TraceError naming the file and where for: a file that cannot be opened
// or read; a corrupt stream (the decompressed byte it reached and ISA-L's reason); a stream
// cut before its end ("truncated"); bytes after the last member that are not a gzip member
// (the compressed byte where they start) — never silently ignored.
class ByteSource {
 public:
  explicit ByteSource(const std::string& path);
  ~ByteSource();
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;
  // Up to `n` bytes into `dst`; 0 at the end of the file.
  size_t read(char* dst, size_t n);
  const std::string& path() const { return path_; }

 private:
  struct Gzip;
  size_t read_raw(uint8_t* dst, size_t n);  // the file's own bytes
  size_t inflate(char* dst, size_t n);
  bool refill();                           // more compressed input; false at the end of the file
  [[noreturn]] void corrupt(const char* reason) const;
  std::string path_;
  int fd_ = -1;
  std::unique_ptr<Gzip> gz_;  // null for a plain file
  uint64_t produced_ = 0;     // decompressed bytes handed out
};

}  // namespace ppstream::analyze::detail
