// The value cutter (json_stream.h): its 64-byte bit-mask path and its byte loop cut the same
// values at every position relative to the blocks and chunks, and name the same byte for a
// mismatched bracket.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyze/byte_source.h"
#include "analyze/json_stream.h"
#include "ppstream/analyze/timeline.h"
#include "util.h"

namespace ppstream::analyze {
namespace {

// Values with what the masks must get right: brackets inside strings, escaped quotes and
// backslashes (blocks holding them go to the byte loop), strings across blocks, deep nesting.
const std::vector<std::string> kValues = {
    R"J({"ph": "X", "name": "void k<{[}]>(float)", "args": {"grid": [512, 1, 1], "s": "]}"}})J",
    R"J({"a": "quote \" and {", "b": [[1, 2], [3, [4, {"c": "\\"}]]], "d": "tail"})J",
    std::string(R"J({"long": ")J") + std::string(150, 'x') + R"J(]}[{", "n": [1]})J",
    R"J([{"x": 1}, {"y": "}{"}, [], {}])J",
    std::string(R"J({"deep": )J") + std::string(40, '[') + "0" + std::string(40, ']') + "}",
};

std::string cut_at(const std::string& path, size_t lead, size_t chunk) {
  detail::ByteSource src(path);
  detail::JsonCursor cur(src, chunk);
  cur.skip_ws();
  EXPECT_EQ(cur.offset(), lead);
  std::string spill;
  const std::string value(cur.take_value_view(spill));
  EXPECT_EQ(cur.peek(), ',');
  return value;
}

TEST(AnalyzeJsonCut, SameValueAtEveryOffsetAndChunkSize) {
  const auto dir = testing::temp_dir("json_cut");
  for (size_t v = 0; v < kValues.size(); ++v) {
    for (size_t lead = 0; lead < 140; lead += 7) {
      // The name by append, not "v" + std::to_string(…): GCC 12 -O2 warns -Wrestrict on operator+(const
      // char*, string&&) (GCC bug 105329, a false positive), as src/config/yaml_out.cpp says.
      const std::string name = std::string("v").append(std::to_string(v)) + "_" + std::to_string(lead) + ".json";
      const std::string path = testing::write_file(dir / name, std::string(lead, ' ') + kValues[v] + ", 1");
      for (size_t chunk : {size_t{61}, size_t{64}, size_t{100}, size_t{257}, detail::JsonCursor::kChunk}) {
        EXPECT_EQ(cut_at(path, lead, chunk), kValues[v]) << "value " << v << " lead " << lead << " chunk " << chunk;
      }
    }
  }
}

TEST(AnalyzeJsonCut, MismatchedBracketNamesItsByte) {
  const auto dir = testing::temp_dir("json_cut_bad");
  const std::string bad = R"({"a": "[", "b": [1, 2})";  // '}' closes the '['
  for (size_t lead : {size_t{0}, size_t{5}, size_t{70}, size_t{130}}) {
    const std::string name = std::string("b").append(std::to_string(lead)) + ".json";  // not "b" + …: -Wrestrict, above
    const std::string path = testing::write_file(dir / name, std::string(lead, ' ') + bad + "]}");
    for (size_t chunk : {size_t{64}, size_t{100}, detail::JsonCursor::kChunk}) {
      detail::ByteSource src(path);
      detail::JsonCursor cur(src, chunk);
      cur.skip_ws();
      std::string spill;
      try {
        cur.take_value_view(spill);
        ADD_FAILURE() << "accepted at lead " << lead;
      } catch (const TraceError& e) {
        EXPECT_NE(std::string(e.what()).find("byte " + std::to_string(lead + bad.size() - 1) + ": '}' closes a '['"),
                  std::string::npos)
            << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace ppstream::analyze
