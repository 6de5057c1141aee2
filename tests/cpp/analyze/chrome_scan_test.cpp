// The Chrome scanner knows no producer: a made-up ScanSpec decides which args keys, host
// categories, kept names, link keys and top-level values reach the mappers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyze/chrome_events.h"
#include "analyze/mappers.h"
#include "util.h"

namespace ppstream::analyze::detail {
namespace {

struct Seen {
  std::string name;
  char ph = 0;
  std::string x, meta_name;
  std::optional<int64_t> n, id;
};

TEST(AnalyzeChromeScan, TheSpecDecidesWhatReachesTheMappers) {
  ScanSpec spec;
  spec.args = {{"x", ArgKey::STRING, 0}, {"n", ArgKey::INT, 1}, {"id", ArgKey::INT, 2}};
  spec.host_categories = {"host", "launch"};
  spec.kept_prefixes = {"Keep#"};
  spec.link_categories = {"launch"};
  spec.link = ArgKey{"id", ArgKey::INT, 2};
  spec.top_keys = {"meta"};
  const std::string text = R"({"other": {"a": 1}, "traceEvents": [
    {"ph":"X","cat":"dev","name":"k","ts":1,"dur":2,"args":{"x":"v","n":7,"y":"unread","id":3}},
    {"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"lane"}},
    {"ph":"X","cat":"host","name":"dropped","ts":1,"dur":2,"args":{"x":"v"}},
    {"ph":"X","cat":"host","name":"Keep#4","ts":1,"dur":2,"args":{"x":"v"}},
    {"ph":"X","cat":"launch","name":"with id","ts":1,"dur":2,"args":{"x":"v","id":9}},
    {"ph":"X","cat":"launch","name":"without id","ts":1,"dur":2,"args":{"x":"v"}},
    {"ph":"i","cat":"dev","name":"instant","ts":1}
  ], "meta": {"rank": 5}})";
  const auto path = testing::write_file(testing::temp_dir("chrome_scan") / "t.json", text);
  std::vector<Seen> seen;
  std::vector<TopValue> tops;
  scan_chrome(
      path, spec,
      [&](const RawEvent& ev) {
        seen.push_back({std::string(ev.name), ev.ph, std::string(ev.args.str[0]), std::string(ev.args.meta_name),
                        ev.args.num[1], ev.args.num[2]});
      },
      [&](const TopValue& v) { tops.push_back(v); });
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].name, "k");
  EXPECT_EQ(seen[0].x, "v");
  EXPECT_EQ(seen[0].n, 7);
  EXPECT_EQ(seen[0].id, 3);
  EXPECT_EQ(seen[1].ph, 'M');
  EXPECT_EQ(seen[1].meta_name, "lane");
  EXPECT_EQ(seen[2].name, "Keep#4");  // a host category's kept name: its args unparsed
  EXPECT_EQ(seen[2].x, "");
  EXPECT_EQ(seen[3].name, "with id");  // a link category: only the link key is parsed
  EXPECT_EQ(seen[3].id, 9);
  EXPECT_EQ(seen[3].x, "");
  ASSERT_EQ(tops.size(), 1u);
  EXPECT_EQ(tops[0].key, "meta");
  EXPECT_EQ(tops[0].json, R"({"rank": 5})");
  EXPECT_EQ(text.substr(tops[0].offset, tops[0].json.size()), tops[0].json);
  // A mapper parses the top values it reads; errors name the file, byte and key. (Through a
  // mapper: simdjson is used only inside the analyze library, which compiles it with
  // SIMDJSON_THREADS_ENABLED; using its inline code here too would break the one-definition rule.)
  KinetoTop top;
  read_kineto_top(path, TopValue{"distributedInfo", R"({"rank": 5})", 7}, top);
  EXPECT_EQ(top.rank, 5);
  try {
    read_kineto_top(path, TopValue{"distributedInfo", R"({"rank" 5})", 42}, top);
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": byte 42: \"distributedInfo\": malformed JSON"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ppstream::analyze::detail
