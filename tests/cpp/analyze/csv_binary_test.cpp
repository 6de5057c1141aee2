// A step_trace_time.csv that is not text (breaker5 F20): a gzip file named .csv is named as
// gzip-compressed, and any other binary first column is echoed with its bytes as \xNN, never
// raw to the terminal.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "ppstream/analyze/readers.h"

namespace ppstream::analyze {
namespace {

std::string error_of(const std::string& name, const std::string& bytes) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << bytes;
  TraceSet set;
  try {
    read_step_trace_csv(path, "unknown", set);
  } catch (const TraceError& e) {
    return std::string(e.what()).substr(path.size());
  }
  return "accepted";
}

TEST(CsvBinary, AGzipFileNamedCsvIsNamedAsGzip) {
  EXPECT_EQ(error_of("gz.csv", std::string("\x1f\x8b\x08\x08\x4d\x9e\x8a\x4e\x02\xfftmp_libkineto.json\n")),
            ": is gzip-compressed (magic 1f 8b); expected a plain-text step_trace_time.csv: decompress it (gunzip), or "
            "name it .json.gz if it is a JSON trace");
}

TEST(CsvBinary, OtherBinaryBytesAreEscaped) {
  EXPECT_EQ(error_of("bin.csv", std::string("Ab\x01\x9b" "cd,x\n")),
            ": line 1: first column 'Ab\\x01\\x9bcd'; expected the step_trace_time.csv header starting with \"Step\"");
}

}  // namespace
}  // namespace ppstream::analyze
