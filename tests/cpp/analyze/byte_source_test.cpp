// ByteSource (src/analyze/byte_source.h): gzip members, plain files, and every way a .gz can be
// broken gives a located error — never a silent short read.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "analyze/byte_source.h"
#include "ppstream/analyze/timeline.h"
#include "util.h"

namespace ppstream::analyze::detail {
namespace {

// One gzip member of `text`; `name` non-empty sets the header's FNAME field (as gzip(1) does).
std::string gzip_member(const std::string& text, const std::string& name = "") {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  gz_header h{};
  std::string n = name;
  if (!name.empty()) {
    h.name = reinterpret_cast<Bytef*>(n.data());
    deflateSetHeader(&z, &h);
  }
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Text that compresses poorly enough to span many 32 KiB input reads.
std::string varied_text(size_t n) {
  std::string s;
  uint32_t x = 12345;
  while (s.size() < n) {
    x = x * 1103515245u + 12345u;
    s += std::to_string(x >> 7) + (x & 1 ? "," : "\n");
  }
  return s;
}

// Everything ByteSource gives for `bytes` written to a file, read `step` bytes at a time.
std::string read_all(const std::string& bytes, size_t step, const std::string& file = "f.json.gz") {
  const auto path = testing::write_file(testing::temp_dir("byte_source") / file, bytes);
  ByteSource src(path);
  std::string out, buf(step, '\0');
  for (size_t n; (n = src.read(buf.data(), step)) > 0;) out.append(buf.data(), n);
  return out;
}

std::string error_of(const std::string& bytes) {
  try {
    read_all(bytes, 1 << 16);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(AnalyzeByteSource, GzipMembersAndPlainFilesReadWhole) {
  const std::string big = varied_text(300'000);
  for (size_t step : {size_t{1} << 16, size_t{7}}) {
    EXPECT_EQ(read_all(gzip_member(big), step), big) << step;
    // Concatenated members (gzip(1) and zlib's gzread decode them all), one with an FNAME.
    EXPECT_EQ(read_all(gzip_member("{\"a\":") + gzip_member("1}", "trace.json"), step), "{\"a\":1}") << step;
    EXPECT_EQ(read_all(gzip_member(big) + gzip_member("") + gzip_member(big), step), big + big) << step;
    // A plain file is read as it is, whatever its name says.
    EXPECT_EQ(read_all(big, step, "plain.json.gz"), big) << step;
  }
  EXPECT_EQ(read_all("", 16), "");
  EXPECT_EQ(read_all(gzip_member(""), 16), "");
}

TEST(AnalyzeByteSource, BrokenStreamsAreLocatedErrors) {
  const std::string text = varied_text(100'000);
  const std::string gz = gzip_member(text);
  // Cut in the middle: the decompressed byte reached, and "truncated".
  const std::string cut = error_of(gz.substr(0, gz.size() / 2));
  EXPECT_NE(cut.find("f.json.gz: byte "), std::string::npos) << cut;
  EXPECT_NE(cut.find("unexpected end of file (the file is truncated or corrupt)"), std::string::npos) << cut;
  // Cut inside the 8-byte trailer: all data inflated, the CRC never checked.
  EXPECT_NE(error_of(gz.substr(0, gz.size() - 3)).find("unexpected end of file"), std::string::npos);
  // A flipped CRC-32 in the trailer.
  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 8] ^= 0x55;
  EXPECT_NE(error_of(bad_crc).find("gzip error: CRC-32 mismatch"), std::string::npos) << error_of(bad_crc);
  // Bytes after the member that are not another member: named by their offset in the file.
  const std::string tail = error_of(gz + "garbage");
  EXPECT_NE(tail.find("byte " + std::to_string(gz.size()) + " of the file: data after the end of the gzip stream (" +
                      std::to_string(text.size()) + " decompressed bytes)"),
            std::string::npos)
      << tail;
  EXPECT_NE(error_of(gz + "x").find("data after the end of the gzip stream"), std::string::npos);
  // A corrupt deflate block right after the header.
  std::string bad_block = gz;
  for (size_t i = 10; i < 40; ++i) bad_block[i] = static_cast<char>(0xff);
  EXPECT_NE(error_of(bad_block).find("gzip error: "), std::string::npos) << error_of(bad_block);
}

TEST(AnalyzeByteSource, MissingFileNamesIt) {
  try {
    ByteSource src("/nonexistent/ppstream/trace.json.gz");
    FAIL() << "opened a missing file";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/ppstream/trace.json.gz: cannot open file"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ppstream::analyze::detail
