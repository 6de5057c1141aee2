// Review regressions of trace reading: numbers out of range used to go through undefined casts
// (ts 1e308 read as 0, pid 99999999999 became rank 1215752191), and a truncated .json.gz was
// reported as malformed JSON instead of a broken gzip stream.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <string>

#include "../analyze/util.h"
#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/readers.h"
#include "ppstream/analyze/timeline.h"

namespace ppstream::analyze {
namespace {

std::string error_of(const std::string& path) {
  try {
    analyze_paths({path});
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

std::string trace(const std::string& slice_fields) {
  return R"({"traceEvents":[{"ph":"M","name":"thread_name","pid":0,"tid":0,"args":{"name":"compute"}},)"
         R"({"ph":"X","name":"F","tid":0,"args":{"kind":"compute"},)" +
         slice_fields + "}]}";
}

TEST(ReviewAnalyzeInput, TimesBeyondInt64NanosecondsAreErrors) {
  const auto dir = testing::temp_dir("review_times");
  EXPECT_NE(error_of(testing::write_file(dir / "e.json", trace(R"("pid":0,"ts":1e308,"dur":5)")))
                .find("event #1: \"ts\" 1e308 µs is out of range; expected |value| < 9.2e15 µs"),
            std::string::npos);
  EXPECT_NE(error_of(testing::write_file(dir / "d.json", trace(R"("pid":0,"ts":0,"dur":99999999999999999)")))
                .find("\"dur\" 99999999999999999 µs is out of range"),
            std::string::npos);
  // Out of range is told apart from not a number at all (a string, an object).
  EXPECT_NE(error_of(testing::write_file(dir / "s.json", trace(R"("pid":0,"ts":0,"dur":"abc")")))
                .find("\"dur\" is not a number of µs"),
            std::string::npos);
  EXPECT_NE(error_of(testing::write_file(dir / "o.json", trace(R"("pid":0,"ts":{},"dur":5)")))
                .find("event #1: \"ts\" is not a number of µs"),
            std::string::npos);
  // The message comes from the grammar that reads the value (parse_us_to_ns): text with two
  // points is no number, not one out of range (a second grammar, is_decimal_number, said it was).
  // Nor is hexadecimal with an 'e' digit, which strtod took (0x1e3 read as 483 µs; review:
  // fails on 407eb78).
  for (const char* text : {"1.2.3", "1..5", ".5.", "0x1e3", "0X1E3", "1e3x"}) {
    const std::string fields = std::string(R"("pid":0,"ts":0,"dur":")") + text + "\"";
    EXPECT_NE(error_of(testing::write_file(dir / "p.json", trace(fields))).find("\"dur\" is not a number of µs"),
              std::string::npos)
        << text;
  }
  EXPECT_NE(error_of(testing::write_file(dir / "x.json", trace(R"("pid":0,"ts":"1e999","dur":5)")))
                .find("\"ts\" 1e999 µs is out of range"),
            std::string::npos);
  // A plausible time still reads: 1.5 ms.
  const AnalysisResult r = analyze_paths({testing::write_file(dir / "ok.json", trace(R"("pid":0,"ts":0,"dur":1500)"))});
  EXPECT_EQ(r.to_text().find("(no error)"), std::string::npos);
  EXPECT_NE(r.to_text().find("1.500"), std::string::npos) << r.to_text();
}

TEST(ReviewAnalyzeInput, PidOutsideTheRankRangeIsAnError) {
  const auto dir = testing::temp_dir("review_pid");
  EXPECT_NE(error_of(testing::write_file(dir / "big.json", trace(R"("pid":99999999999,"ts":0,"dur":5)")))
                .find("\"pid\" 99999999999 is not a rank; expected 0..2147483647"),
            std::string::npos);
  EXPECT_NE(error_of(testing::write_file(dir / "neg.json", trace(R"("pid":-1,"ts":0,"dur":5)")))
                .find("\"pid\" -1 is not a rank"),
            std::string::npos);
}

TEST(ReviewAnalyzeInput, TruncatedGzipSaysSo) {
  const auto dir = testing::temp_dir("review_gz");
  std::string json = R"({"traceEvents":[)";
  for (int i = 0; i < 2000; ++i)
    json += (i ? "," : "") + std::string(R"({"ph":"X","name":"F","pid":0,"tid":0,"ts":)") + std::to_string(i * 10) +
            R"(,"dur":5,"args":{"kind":"compute"}})";
  json += "]}";
  const std::string full = (dir / "full.json.gz").string();
  gzFile g = gzopen(full.c_str(), "wb");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(gzwrite(g, json.data(), static_cast<unsigned>(json.size())), static_cast<int>(json.size()));
  gzclose(g);
  std::ifstream in(full, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = (dir / "cut.json.gz").string();
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  const std::string e = error_of(cut);
  EXPECT_NE(e.find("gzip error"), std::string::npos) << e;
  EXPECT_NE(e.find("truncated or corrupt"), std::string::npos) << e;
  EXPECT_EQ(error_of(full), "(no error)");
}

// Two outputs that are one file (analyze::same_output), as a write would meet them: a dangling
// symbolic link is the file it points at (writing through it creates that file), and an option
// spelt as a Python keyword ("svg=") is joined to its path as input_named_by's callers write it
// ("svg=P", not "svg= P"). Both fail on 407eb78 (the link compared by its own spelling: no
// error; "svg= P").
TEST(ReviewAnalyzeInput, SameOutputFollowsADanglingLinkAndSpellsKeywords) {
  namespace fs = std::filesystem;
  const fs::path d = testing::temp_dir("same_output");
  fs::create_directories(d / "sub");
  const std::string target = (d / "sub" / "t.json").string(), link = (d / "link.json").string();
  fs::create_symlink("sub/t.json", link);  // relative to the link's directory; t.json does not exist
  ASSERT_FALSE(fs::exists(target));
  const auto twice = same_output({{"--trace", target}, {"--svg", link}});
  ASSERT_TRUE(twice.has_value());
  EXPECT_EQ(*twice, "--trace " + target + " and --svg " + link + " are the same file");
  fs::create_symlink("link.json", d / "link2.json");  // a chain of dangling links
  EXPECT_TRUE(same_output({{"--trace", (d / "link2.json").string()}, {"--svg", target}}).has_value());
  EXPECT_FALSE(same_output({{"--trace", target}, {"--svg", (d / "other.json").string()}}).has_value());
  const std::string p = (d / "s.out").string();
  EXPECT_EQ(same_output({{"svg=", p}, {"trace=", p}}).value_or(""), "svg=" + p + " and trace=" + p + " are the same file");
}

}  // namespace
}  // namespace ppstream::analyze
