// The scanner's fast path (chrome_events.cpp dropped_by_leading_keys): events whose leading keys
// are "ph", "cat", "name" are dropped or kept from those alone, with the same result as the full
// parse that events with other key orders take.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "analyze/chrome_reader.h"
#include "analyze/event_fast_path.h"
#include "ppstream/analyze/analyze.h"
#include "ppstream/analyze/megatron.h"
#include "ppstream/analyze/readers.h"
#include "util.h"

namespace ppstream::analyze {
namespace {

struct Ev {
  std::string ph, cat, name, rest;  // rest: the other keys, as JSON members
};

// Kineto's order (ph, cat, name first: the fast path) or name and rest first (the full parse).
std::string trace(const std::vector<Ev>& evs, bool kineto_order) {
  std::string t = R"({"distributedInfo": {"rank": 0}, "traceEvents": [)";
  for (size_t i = 0; i < evs.size(); ++i) {
    const Ev& e = evs[i];
    const std::string ph = R"("ph": ")" + e.ph + '"', cat = R"("cat": ")" + e.cat + '"',
                      name = R"("name": ")" + e.name + '"';
    t += (i ? ",\n" : "") + (kineto_order ? "{" + ph + ", " + cat + ", " + name + ", " + e.rest + "}"
                                          : "{" + e.rest + ", " + name + ", " + cat + ", " + ph + "}");
  }
  return t + "]}";
}

TEST(AnalyzeFastPath, LeadingKeysDecideAsTheFullParse) {
  const std::vector<Ev> evs = {
      {"X", "cpu_op", "ProfilerStep#1", R"("pid": 1, "tid": 1, "ts": 0, "dur": 100)"},
      {"X", "cpu_op", "ProfilerStep#2", R"("pid": 1, "tid": 1, "ts": 100, "dur": 100)"},
      {"X", "cpu_op", "aten::mm", R"("pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"stream": 7})"},
      {"X", "cpu_op", R"(esc\"aped)", R"("pid": 1, "tid": 1, "ts": 11, "dur": 5, "args": {"stream": 7})"},
      {"f", "ac2g", "ac2g", R"("id": 3, "pid": 1, "tid": 1, "ts": 90, "bp": "e")"},
      {"X", "cuda_runtime", "cudaLaunchKernel", R"("pid": 1, "tid": 1, "ts": 90, "dur": 2, "args": {"correlation": 3})"},
      {"X", "kernel", "gemm", R"("pid": 0, "tid": 7, "ts": 150, "dur": 20, "args": {"stream": 7, "correlation": 3})"},
      {"X", "kernel", "gemm2", R"("pid": 0, "tid": 7, "ts": 120, "dur": 10, "args": {"stream": 7})"},
      {"i", "cpu_op", "instant", R"("pid": 1, "tid": 1, "ts": 5, "s": "t")"},
      // Launches: without a correlation (dropped), with a string one or nested args (full parse),
      // with a corrupt duration (dropped with a note naming it), of kernels below.
      {"X", "cuda_runtime", "cudaMemsetAsync", R"("pid": 1, "tid": 1, "ts": 91, "dur": 1, "args": {"cbid": 2})"},
      {"X", "cuda_runtime", "cudaLaunchKernel", R"("pid": 1, "tid": 1, "ts": 20, "dur": 2, "args": {"correlation": "4"})"},
      {"X", "cuda_driver", "cuLaunchKernel", R"("pid": 1, "tid": 1, "ts": 21, "dur": 2, "args": {"x": [1], "correlation": 5})"},
      {"X", "cuda_runtime", "cudaLaunchKernel", R"("pid": 1, "tid": 1, "ts": 22, "dur": -3, "args": {"correlation": 6})"},
      {"X", "kernel", "k4", R"("pid": 0, "tid": 7, "ts": 30, "dur": 1, "args": {"stream": 7, "correlation": 4})"},
      {"X", "kernel", "k5", R"("pid": 0, "tid": 7, "ts": 31, "dur": 1, "args": {"stream": 7, "correlation": 5})"},
      {"X", "kernel", "k6", R"("pid": 0, "tid": 7, "ts": 32, "dur": 1, "args": {"stream": 7, "correlation": 6})"},
  };
  const auto dir = testing::temp_dir("fast_path");
  std::vector<std::string> reports;
  for (bool kineto_order : {true, false}) {
    const auto sub = dir / (kineto_order ? "a" : "b");
    TraceSet set;
    read_paths({testing::write_file(sub / "t.json", trace(evs, kineto_order))}, set);
    ASSERT_EQ(set.ranks.size(), 1u);
    const auto& tl = set.ranks[0];
    EXPECT_EQ(tl.steps.size(), 2u);   // the ProfilerStep cpu_ops are kept, no other cpu_op is a slice
    ASSERT_EQ(tl.slices.size(), 5u);  // k4, k5, k6, gemm2, gemm
    const auto launch_of = [&](const std::string& name) -> std::optional<int64_t> {
      for (const auto& s : tl.slices) {
        if (set.strings.str(s.name) == name) return s.launch_ns;
      }
      return std::nullopt;
    };
    EXPECT_EQ(launch_of("gemm"), 90'000);  // its launch (a link event) was read
    EXPECT_EQ(launch_of("k4"), 20'000);
    EXPECT_EQ(launch_of("k5"), 21'000);
    EXPECT_EQ(launch_of("k6"), std::nullopt);  // its launch was dropped for its duration
    ASSERT_EQ(set.notes.size(), 1u);
    EXPECT_NE(set.notes[0].find("'cudaLaunchKernel': \"dur\" -3.000 µs is negative"), std::string::npos) << set.notes[0];
    std::string text = analyze(set).to_json();
    for (size_t at; (at = text.find(sub.string())) != std::string::npos;) text.replace(at, sub.string().size(), "DIR");
    reports.push_back(text);
  }
  EXPECT_EQ(reports[0], reports[1]);
}

// The flat-event path (event_fast_path.h read_flat_event): Megatron timer events are read without
// a simdjson document, with the same result as the full parse. Each event below is written twice:
// as it is (the flat path) and with a trailing array member, which the flat path refuses and no
// reader reads (the full parse).
const std::vector<std::string> kTimerEvents = {
    R"("name": "thread_name", "ph": "M", "pid": 0, "tid": 3, "args": {"name": "PP rank 0, TP rank 0, compute"})",
    R"("name":"thread_name","ph":"M","pid":1,"tid":3,"args":{"name":"PP rank 1, TP rank 0, compute"})",
    R"("name": "thread_sort_index", "ph": "M", "pid": 0, "tid": 3, "args": {"sort_index": 3})",
    R"("name": "process_name", "ph": "M", "pid": 0, "args": {"name": "DP rank [0]"})",
    R"("name":"forward-compute","cat":"forward-compute","pid":0,"tid":3,"ts":2688330.4119110107,"dur":854347.6462364197,"ph":"X","args":{"step":16,"model_chunk":0,"mb_id":0,"seq_id":0})",
    R"({ "ph" : "X" , "name" : "forward-compute" , "pid" : 1 , "tid" : 3 , "ts" : 12 , "dur" : 0.0005 , "args" : { "seq_id" : 0 , "step" : 16 , "model_chunk" : -1 , "mb_id" : 2 , "other" : 1.5 } })",
    R"("name": "backward-compute", "ph": "X", "pid": 0, "tid": 3, "ts": -0.0015, "dur": 7.9995, "s": "t", "id": null, "args": {"step": 16, "seq_id": 1, "mb_id": -1, "note": "x", "flag": true})",
    R"("name": "backward-compute", "ph": "X", "pid": 1, "tid": 3, "ts": 100.25, "dur": 3, "args": {"step": 16, "seq_id": 1})",
    R"("name": "an annotation", "ph": "X", "pid": 0, "tid": 3, "ts": 200, "dur": 1, "args": {})",
    R"("name": "an instant", "ph": "i", "pid": 0, "tid": 3, "ts": 5, "args": {"mb_id": 16, "note": 9})",
};

// The TraceError's text `read` throws, or "(no error)" (which no expected text contains).
template <class Read>
std::string trace_error(Read&& read) {
  try {
    read();
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string timer_trace(const std::vector<std::string>& members, bool full_parse) {
  std::string t = "[";
  for (size_t i = 0; i < members.size(); ++i) {
    std::string m = members[i];
    if (m.front() == '{') m = m.substr(1, m.size() - 2);  // written with its own braces
    t += (i ? ",\n{" : "{") + m + (full_parse ? R"(, "zz": [0])" : "") + "}";
  }
  return t + "]";
}

TEST(AnalyzeFastPath, FlatEventsAreReadWithoutADocument) {
  for (const std::string& m : kTimerEvents) {
    const std::string text = m.front() == '{' ? m : "{" + m + "}";
    detail::RawEvent ev;
    EXPECT_EQ(detail::read_flat_event(detail::timer_scan_spec(), text, ev), text.size()) << text;
    ev = {};
    EXPECT_EQ(detail::read_flat_event(detail::timer_scan_spec(), text + ",\n{}", ev), text.size()) << text;
    ev = {};
    EXPECT_EQ(detail::read_flat_event(detail::timer_scan_spec(), text.substr(0, text.size() - 1), ev), 0u) << text;
    const std::string forced = timer_trace({m}, true);
    EXPECT_EQ(detail::read_flat_event(detail::timer_scan_spec(), forced.substr(1, forced.size() - 2), ev), 0u);
  }
  detail::RawEvent ev;
  for (const char* refused : {R"({"name": "n\u0061", "ph": "X"})", R"({"ph": "X", "ph": "M"})",
                              R"({"ph": "X", "ts": 1e3})", R"({"ph": "X", "pid": 01})", R"({"ph": "X", "pid": 1.0})",
                              R"({"ph": "X", "ts": "12"})", R"({"ph": "X", "args": {"step": "3"}})",
                              R"({"ph": "X", "cat": "cpu_op"})", R"({"ph": "X", "name": "é"})", R"({"ph": "X",})",
                              R"({"ph": "X", "ts": 1.})", R"({"ph": "X", "pid": 1234567890123456789})", "{}"})
    EXPECT_EQ(detail::read_flat_event(detail::timer_scan_spec(), refused, ev), 0u) << refused;
}

TEST(AnalyzeFastPath, FlatTimerEventsReadAsTheFullParse) {
  const auto dir = testing::temp_dir("flat_events");
  TimerTrace t[2];
  for (bool full : {false, true}) {
    read_timer_trace(testing::write_file(dir / (full ? "b" : "a") / "t.json", timer_trace(kTimerEvents, full)), t[full]);
  }
  ASSERT_EQ(t[0].ops.size(), 4u);
  ASSERT_EQ(t[1].ops.size(), t[0].ops.size());
  for (size_t i = 0; i < t[0].ops.size(); ++i) {
    const TimerOp &a = t[0].ops[i], &b = t[1].ops[i];
    EXPECT_EQ(std::tie(a.start_ns, a.dur_ns, a.step, a.dp_rank, a.pp_rank, a.tp_rank, a.chunk, a.mb, a.seq, a.tid),
              std::tie(b.start_ns, b.dur_ns, b.step, b.dp_rank, b.pp_rank, b.tp_rank, b.chunk, b.mb, b.seq, b.tid))
        << "op " << i;
    EXPECT_EQ(t[0].strings.str(a.name), t[1].strings.str(b.name));
    EXPECT_EQ(a.lane, b.lane);
  }
  EXPECT_EQ(t[0].ops[0].start_ns, 2'688'330'412);  // µs decimals rounded on the 4th, as everywhere
  EXPECT_EQ(t[0].ops[1].dur_ns, 1);
  EXPECT_EQ(t[0].ops[2].start_ns, -2);
  EXPECT_EQ(t[0].ops[2].mb, -1);
  EXPECT_EQ(t[0].declared_workers.size(), 2u);
  EXPECT_EQ(t[0].declared_workers.size(), t[1].declared_workers.size());
  ASSERT_EQ(t[0].notes.size(), 1u);  // the annotation without step / seq_id
  ASSERT_EQ(t[1].notes.size(), 1u);
  EXPECT_NE(t[0].notes[0].find(": 1 complete events are no timer op"), std::string::npos) << t[0].notes[0];
}

// A bad last event: the same located error on both paths (the flat path leaves it to the full
// parse, or reads what the full parse reads and the mapper refuses it).
TEST(AnalyzeFastPath, FlatTimerEventErrorsAreTheFullParses) {
  const std::vector<std::string> bad = {
      R"("name": "forward-compute", "ph": "X", "pid": 0, "tid": 3, "ts": 1, "dur": 1, "args": {"step": -2, "seq_id": 0})",
      R"("name": "forward-compute", "ph": "X", "pid": 0, "tid": 3, "ts": 1, "dur": 1, "args": {"step": 2147483648, "seq_id": 0})",
      R"("name": "forward-compute", "ph": "X", "pid": -1, "tid": 3, "ts": 1, "dur": 1, "args": {"step": 1, "seq_id": 0})",
      R"("name": "forward-compute", "ph": "X", "pid": 0, "tid": 3, "dur": 1, "args": {"step": 1, "seq_id": 0})",
      R"("name": "forward-compute", "ph": "X", "pid": 0, "tid": 3, "ts": 1, "dur": -1, "args": {"step": 1, "seq_id": 0})",
      R"("name": "forward-compute", "ph": "X", "pid": 0, "tid": 3, "ts": 1.2.3, "dur": 1, "args": {"step": 1, "seq_id": 0})",
      R"("name": "forward-compute", "ph": "X", "pid": 0, "tid": 4, "ts": 1, "dur": 1, "args": {"step": 1, "seq_id": 0})",
  };
  const auto dir = testing::temp_dir("flat_errors");
  for (size_t i = 0; i < bad.size(); ++i) {
    std::string msg[2];
    for (bool full : {false, true}) {
      std::vector<std::string> evs(kTimerEvents.begin(), kTimerEvents.begin() + 5);
      const std::string good = timer_trace(evs, false);
      const std::string last = timer_trace({bad[i]}, full);
      const auto path = testing::write_file(dir / fmt::format("{}{}", i, full ? "b" : "a") / "t.json",
                                            good.substr(0, good.size() - 1) + ",\n" + last.substr(1));
      TimerTrace t;
      try {
        read_timer_trace(path, t);
        ADD_FAILURE() << "no error for " << bad[i];
      } catch (const TraceError& e) {
        msg[full] = e.what();
        const auto at = msg[full].find(path);
        if (at != std::string::npos) msg[full].replace(at, path.size(), "FILE");
      }
    }
    EXPECT_EQ(msg[0], msg[1]) << bad[i];
    EXPECT_NE(msg[0].find("FILE: byte "), std::string::npos) << msg[0];
  }
}


// The error read_timer_trace gives for kTimerEvents' first five events and then `bad`, on the
// flat path and on the full parse (the file written as FILE); "" when it reads.
std::array<std::string, 2> timer_error(const std::string& name, const std::vector<std::string>& bad) {
  const auto dir = testing::temp_dir("timer_errors");
  std::array<std::string, 2> msg;
  for (bool full : {false, true}) {
    std::vector<std::string> evs(kTimerEvents.begin(), kTimerEvents.begin() + 5);
    const std::string good = timer_trace(evs, false), last = timer_trace(bad, full);
    const auto path = testing::write_file(dir / fmt::format("{}{}", name, full ? "b" : "a") / "t.json",
                                          good.substr(0, good.size() - 1) + ",\n" + last.substr(1));
    TimerTrace t;
    try {
      read_timer_trace(path, t);
    } catch (const TraceError& e) {
      msg[full] = e.what();
      const auto at = msg[full].find(path);
      if (at != std::string::npos) msg[full].replace(at, path.size(), "FILE");
    }
  }
  return msg;
}

// What marks a timer op (docs/whatif.md "Input"): args.step or args.seq_id given, or an "X" event
// named as a timer. One that is malformed is a located error, not an event silently left out
// (breaker3: each of these read as "no timer op" and the lifting failed far away, "has no
// counterpart on DP rank 0"). Fails on 4a547bd: no error at all.
TEST(MegatronReader, MalformedTimerOpsAreLocated) {
  const std::string head = R"("name": "backward-compute", "pid": 0, "tid": 3, "ts": 9, "dur": 1)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {head + R"(, "ph": "X", "args": {"step": 00, "seq_id": 0})", "args.step that is no integer"},
      {head + R"(, "ph": "X", "args": {"step": null, "seq_id": 0})", "args.step that is no integer"},
      {head + R"(, "ph": "X", "args": {"step": "x", "seq_id": 0})", "args.step that is no integer"},
      {head + R"(, "ph": "X", "args": {"step": 1.5, "seq_id": 0})", "args.step that is no integer"},
      {head + R"(, "ph": "X", "args": {"step": 16, "seq_id": "y"})", "args.seq_id that is no integer"},
      {head + R"(, "ph": "X", "args": {"step": 16})", "args.seq_id missing"},
      {head + R"(, "ph": "X")", "args.step missing"},
      {head + R"(, "ph": "X", "args": null)", "args.step missing (\"args\" is null)"},
      {head + R"(, "args": {"step": 16, "seq_id": 0})", "its \"ph\" is missing"},
      {head + R"(, "ph": "B", "args": {"step": 16, "seq_id": 0})", "its \"ph\" is 'B'"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto msg = timer_error(fmt::format("m{}", i), {cases[i].first});
    EXPECT_EQ(msg[0], msg[1]) << cases[i].first;
    EXPECT_NE(msg[0].find("FILE: byte "), std::string::npos) << cases[i].first << ": " << msg[0];
    EXPECT_NE(msg[0].find("event #5 'backward-compute'"), std::string::npos) << msg[0];
    EXPECT_NE(msg[0].find(cases[i].second), std::string::npos) << cases[i].first << ": " << msg[0];
  }
}

// A key the reader reads given twice in one event (breaker4: "dur" twice, the last value won and
// whatif's and analyze's figures changed, rc 0; "step":24,"step":23 read 23) is a located error
// naming the key, on the flat path (which leaves it to the full parse) and the full parse alike,
// for whatif's reader and analyze's. Fails on 0415469: no error for any of them.
TEST(MegatronReader, AKeyGivenTwiceInOneEventIsLocated) {
  const std::string base = R"("name": "backward-compute", "ph": "X", "pid": 0, "tid": 3, "ts": 9, "dur": 1, "args": {"step": 16, "seq_id": 0})";
  const std::string head = R"("name": "backward-compute", "ph": "X", "pid": 0, "tid": 3)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {head + R"(, "ts": 9, "dur": 1, "dur": 2, "args": {"step": 16, "seq_id": 0})", "\"dur\""},
      {head + R"(, "ts": 9, "ts": 10, "dur": 1, "args": {"step": 16, "seq_id": 0})", "\"ts\""},
      {head + R"(, "pid": 1, "ts": 9, "dur": 1, "args": {"step": 16, "seq_id": 0})", "\"pid\""},
      {head + R"(, "tid": 3, "ts": 9, "dur": 1, "args": {"step": 16, "seq_id": 0})", "\"tid\""},
      {head + R"(, "name": "forward-compute", "ts": 9, "dur": 1, "args": {"step": 16, "seq_id": 0})", "\"name\""},
      {head + R"(, "ph": "X", "ts": 9, "dur": 1, "args": {"step": 16, "seq_id": 0})", "\"ph\""},
      {head + R"(, "cat": "a", "cat": "b", "ts": 9, "dur": 1, "args": {"step": 16, "seq_id": 0})", "\"cat\""},
      {base + R"(, "args": {"step": 16, "seq_id": 0})", "\"args\""},
      {head + R"(, "ts": 9, "dur": 1, "args": {"step": 16, "step": 15, "seq_id": 0})", "\"args.step\""},
      {head + R"(, "ts": 9, "dur": 1, "args": {"step": 16, "seq_id": 0, "seq_id": 1})", "\"args.seq_id\""},
      {head + R"(, "ts": 9, "dur": 1, "args": {"step": 16, "seq_id": 0, "mb_id": 1, "mb_id": 2})", "\"args.mb_id\""},
  };
  const auto dir = testing::temp_dir("key_twice");
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string& ev = cases[i].first;
    const auto msg = timer_error(fmt::format("k{}", i), {ev});
    EXPECT_EQ(msg[0], msg[1]) << ev;
    EXPECT_NE(msg[0].find("FILE: byte "), std::string::npos) << ev << ": " << msg[0];
    EXPECT_NE(msg[0].find("event #5: key " + cases[i].second + " given twice in one event (again at byte "),
              std::string::npos) << ev << ": " << msg[0];
    // analyze reads the same file with the same error.
    const std::string good = timer_trace(std::vector<std::string>(kTimerEvents.begin(), kTimerEvents.begin() + 5), false);
    const auto path = testing::write_file(dir / fmt::format("k{}", i) / "t.json",
                                          good.substr(0, good.size() - 1) + ",\n" + timer_trace({ev}, false).substr(1));
    TraceSet set;
    try {
      read_chrome_trace(path, set);
      ADD_FAILURE() << "analyze read " << ev;
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("key " + cases[i].second + " given twice"), std::string::npos) << e.what();
    }
  }
  // A Kineto kernel with "dur" twice: the same error (the full parse of every Chrome trace).
  const auto kineto = testing::write_file(
      dir / "kineto.json",
      R"({"distributedInfo": {"rank": 0}, "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "dur": 3, "args": {"stream": 7, "device": 0}}]})");
  TraceSet set;
  const std::string twice = trace_error([&] { read_chrome_trace(kineto, set); });
  EXPECT_NE(twice.find(kineto + ": byte 49: event #0: key \"dur\" given twice in one event (again at byte 130)"),
            std::string::npos) << twice;
  // Keys the reader does not read may repeat (they change no figure), and the flat path still
  // reads a spelling of one slot once.
  EXPECT_EQ(timer_error("k_other", {base + R"(, "id": 1, "id": 2)"})[0], "");
}

// analyze reads the files whatif reads (docs/whatif.md "Input"): a malformed timer op is the same
// located error there, not an op silently left out (breaker4: "ph" "B", "step" null or no "ph":
// analyze rc 0, dropped_events 0, one backward gone). Fails on 0415469: analyze read them all.
TEST(MegatronReader, AnalyzeRefusesTheMalformedTimerOpsWhatifRefuses) {
  const std::string head = R"("name": "backward-compute", "pid": 0, "tid": 3, "ts": 9, "dur": 1)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {head + R"(, "ph": "X", "args": {"step": null, "seq_id": 0})", "args.step that is no integer"},
      {head + R"(, "ph": "X", "args": {"step": 16})", "args.seq_id missing"},
      {head + R"(, "ph": "X", "args": {"seq_id": 0})", "args.step missing"},
      {head + R"(, "args": {"step": 16, "seq_id": 0})", "its \"ph\" is missing"},
      {head + R"(, "ph": "B", "args": {"step": 16, "seq_id": 0})", "its \"ph\" is 'B'"},
      {R"("ph": "i", "args": {"step": 16, "seq_id": 0}, )" + head, "its \"ph\" is 'i'"},
      {R"("ph": "E", "args": {"st\u0065p": 16}, )" + head, "its \"ph\" is 'E'"},
  };
  const auto dir = testing::temp_dir("analyze_timer_faults");
  const std::string good = timer_trace(std::vector<std::string>(kTimerEvents.begin(), kTimerEvents.begin() + 5), false);
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto path = testing::write_file(dir / fmt::format("a{}", i) / "t.json",
                                          good.substr(0, good.size() - 1) + ",\n" + timer_trace({cases[i].first}, false).substr(1));
    TraceSet set;
    try {
      read_chrome_trace(path, set);
      ADD_FAILURE() << "analyze read " << cases[i].first;
    } catch (const TraceError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path + ": byte "), std::string::npos) << msg;
      EXPECT_NE(msg.find("event #5 'backward-compute'"), std::string::npos) << msg;
      EXPECT_NE(msg.find(cases[i].second), std::string::npos) << cases[i].first << ": " << msg;
    }
  }
  // Flows and instants that claim nothing stay dropped, and the good file is read.
  const auto ok = testing::write_file(dir / "ok" / "t.json", good.substr(0, good.size() - 1) +
                                      R"(, {"ph": "i", "name": "x", "pid": 0, "tid": 3, "ts": 1, "args": {"kind": "step"}}])");
  TraceSet set;
  read_chrome_trace(ok, set);
  EXPECT_FALSE(set.ranks.empty());
}

// A "ts" beyond the analyzer's bound (timeline.h kMaxAbsTsNs), or within it but days off the
// rest of its step (breaker3: 1e15 gave "the lifted dependencies form a cycle", naming no file;
// -9223372036854 a launch_slowdown of 1e7 with exit 0), is a located error. Fails on 4a547bd.
TEST(MegatronReader, CorruptTimestampsAreLocated) {
  const auto ev = [](const std::string& ts) {
    return R"("name": "backward-compute", "ph": "X", "pid": 0, "tid": 3, "dur": 1, "args": {"step": 16, "seq_id": 0}, "ts": )" + ts;
  };
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"5e15", "FILE: byte ", "is beyond ±4e+15 µs"},
      {"-4000000000000001", "FILE: byte ", "is beyond ±4e+15 µs"},
      {"1e15", "FILE: step 16 spans 11574.1 days", "a \"ts\" is corrupt"},
      {"-9223372036854", "FILE: step 16 spans 106.8 days", "a \"ts\" is corrupt"}};
  for (const auto& [ts, where, what] : cases) {
    const auto msg = timer_error("ts" + ts, {ev(ts)});
    EXPECT_EQ(msg[0], msg[1]) << ts;
    EXPECT_NE(msg[0].find(where), std::string::npos) << ts << ": " << msg[0];
    EXPECT_NE(msg[0].find(what), std::string::npos) << ts << ": " << msg[0];
  }
  // A step of just under 7 days (its first op starts at 2,688,330.4 µs) is read.
  EXPECT_EQ(timer_error("ts_ok", {ev("604802688000")})[0], "");
}

// The 7-day bound of one step holds across the files of a job, not per file (breaker4: ST split
// by pid into two files, the second's "ts" + 1e14 µs: whatif rc 0, launch_slowdown 46058258).
// Names the step, both files and the two ops. Fails on 0415469: both files read.
TEST(MegatronReader, AStepSpanningDaysAcrossFilesIsLocated) {
  const auto dir = testing::temp_dir("span_files");
  const std::string a = testing::write_file(
      dir / "a.json", timer_trace({kTimerEvents[0], kTimerEvents[2], kTimerEvents[3], kTimerEvents[4]}, false));
  std::string late = kTimerEvents[5];
  late.replace(late.find("\"ts\" : 12"), 9, "\"ts\" : 100000000000012");
  const std::string b = testing::write_file(dir / "b.json", timer_trace({kTimerEvents[1], late}, false));
  const std::string b_ok = testing::write_file(dir / "b_ok.json", timer_trace({kTimerEvents[1], kTimerEvents[5]}, false));
  {
    TimerTrace t;
    read_timer_trace(a, t);
    read_timer_trace(b_ok, t);
    EXPECT_EQ(t.ops.size(), 2u);
  }
  for (const auto& [first, second] : {std::pair{a, b}, std::pair{b, a}}) {
    TimerTrace t;
    try {
      read_timer_trace(first, t);
      read_timer_trace(second, t);
      ADD_FAILURE() << "read " << t.ops.size() << " ops";
    } catch (const TraceError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(fmt::format("{} and {}: step 16 spans 1157.4 days, from the op at {}: byte ", a, b, a)),
                std::string::npos) << msg;
      EXPECT_NE(msg.find(fmt::format("(\"ts\" 2688330.412 µs) to the end of the op at {}: byte ", b)), std::string::npos)
          << msg;
      EXPECT_NE(msg.find("(\"ts\" 100000000000012.000 µs); one step's ops lie within 7 days across the files of a job"),
                std::string::npos) << msg;
    }
  }
}

// breaker4's wording faults: a field out of range is named with its value (the message listed
// every bound and named none), and a UTF-8 byte-order mark at the start of a file is skipped
// (JSON lets a reader ignore one; it was "expected a JSON object or array"). Fails on 0415469.
TEST(MegatronReader, RangeErrorsNameTheFieldAndABomIsSkipped) {
  const std::string head = R"("name": "backward-compute", "ph": "X", "ts": 9, "dur": 1, )";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {head + R"("pid": 0, "tid": 3, "args": {"step": 16, "seq_id": 0, "mb_id": -2})", "needs args.mb_id in -1..2147483647 (docs/whatif.md \"Input\"); it is -2"},
      {head + R"("pid": 0, "tid": 3, "args": {"step": 16, "seq_id": 0, "model_chunk": 2147483648})", "needs args.model_chunk in -1..2147483647 (docs/whatif.md \"Input\"); it is 2147483648"},
      {head + R"("pid": -1, "tid": 3, "args": {"step": 16, "seq_id": 0})", "needs pid in 0..2147483647 (the DP rank); it is -1"},
      {head + R"("pid": 0, "args": {"step": 16, "seq_id": 0})", "needs tid in 0..2147483647 (the lane's thread); it is missing or no integer"},
      {head + R"("pid": 0, "tid": 3, "args": {"step": 16, "seq_id": -3})", "needs args.seq_id in 0..2147483647 (docs/whatif.md \"Input\"); it is -3"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto msg = timer_error(fmt::format("r{}", i), {cases[i].first});
    EXPECT_EQ(msg[0], msg[1]);
    EXPECT_NE(msg[0].find("event #5 'backward-compute': a Megatron timer op " + cases[i].second), std::string::npos)
        << msg[0];
  }
  const auto dir = testing::temp_dir("bom");
  const std::string good = timer_trace(std::vector<std::string>(kTimerEvents.begin(), kTimerEvents.begin() + 8), false);
  const auto bom = testing::write_file(dir / "bom.json", "\xEF\xBB\xBF" + good);
  TimerTrace t;
  read_timer_trace(bom, t);
  EXPECT_EQ(t.ops.size(), 4u);
  TraceSet set;
  read_paths({bom}, set);
  EXPECT_FALSE(set.ranks.empty());
  const auto broken = testing::write_file(dir / "broken.json", "\xEF\xBB" + good);
  TimerTrace u;
  const std::string msg = trace_error([&] { read_timer_trace(broken, u); });
  EXPECT_NE(msg.find(broken + ": byte 2: a byte that is neither JSON nor part of a UTF-8 byte-order mark"),
            std::string::npos) << msg;
}

// A second "traceEvents" would hold every op twice (breaker3: read twice, the lifting then said
// "two forward-compute ops with seq_id 0"): the file and key are named. Fails on 4a547bd.
TEST(MegatronReader, TopLevelKeyGivenTwiceIsRefused) {
  const auto dir = testing::temp_dir("dup_key");
  const std::string events = timer_trace(std::vector<std::string>(kTimerEvents.begin(), kTimerEvents.begin() + 5), false);
  const auto path = testing::write_file(dir / "t.json", R"({"traceEvents": )" + events + R"(, "traceEvents": )" + events + "}");
  TimerTrace t;
  const std::string msg = trace_error([&] { read_timer_trace(path, t); });
  EXPECT_NE(msg.find(path + ": byte "), std::string::npos) << msg;
  EXPECT_NE(msg.find("top-level key \"traceEvents\" given twice"), std::string::npos) << msg;
}

// "No timer op among N events" counts every event of the file, those the scanner drops by their
// host category too (breaker3: "among 0 events" for a file of 147). Fails on 4a547bd ("among 1").
TEST(MegatronReader, NoTimerOpCountsEveryEvent) {
  const auto dir = testing::temp_dir("no_timer_op");
  std::string t = R"([{"name": "thread_name", "ph": "M", "pid": 0, "tid": 3, "args": {"name": "PP rank 0, TP rank 0, compute"}})";
  for (int i = 0; i < 146; ++i)
    t += fmt::format(R"(,{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 0, "tid": 3, "ts": {}, "dur": 1}})", i);
  const auto path = testing::write_file(dir / "t.json", t + "]");
  TimerTrace tt;
  const std::string msg = trace_error([&] { read_timer_trace(path, tt); });
  EXPECT_NE(msg.find(path + ": no Megatron timer op among 147 events"), std::string::npos) << msg;
}

// Event shapes (event_fast_path.h EventShapes): after one event, the next ones of its shape are
// read by comparing their literal text; every way an event can differ from the remembered shape
// gives read_flat_event's own result (and so the full parse's, above), by the shape or by the
// fallback to read_flat_event.
std::string dump(const detail::RawEvent& e) {
  std::string s = fmt::format("ph {} name '{}' cat '{}' pid {} tid {} ts {} dur {} meta '{}' given {:x}", e.ph,
                              e.name, e.cat, e.pid ? std::to_string(*e.pid) : "-", e.tid ? std::to_string(*e.tid) : "-",
                              e.ts_ns ? std::to_string(*e.ts_ns) : "-", e.dur_ns ? std::to_string(*e.dur_ns) : "-",
                              e.args.meta_name, e.args.num_given);
  for (size_t i = 0; i < detail::kArgSlots; ++i) {
    if (e.args.num[i]) s += fmt::format(" num[{}] {}", i, *e.args.num[i]);
    if (!e.args.str[i].empty()) s += fmt::format(" str[{}] '{}'", i, e.args.str[i]);
  }
  return s;
}

const std::string kShapeBase =
    R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})";

struct ShapeCase {
  std::string text;
  bool by_shape;  // read by the remembered shape (a value that differs); else by read_flat_event
};

const std::vector<ShapeCase> kShapeCases = {
    {kShapeBase, true},
    // Values differ: the shape reads them with read_flat_event's parsers.
    {R"({"name":"backward-compute-x","cat":"backward","ph":"i","pid":12,"tid":345,"ts":-12345.6785,"dur":0,"args":{"step":16,"model_chunk":-1,"mb_id":123,"seq_id":7}})", true},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":123456789012345.678901,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})", true},
    {R"({"name":"","cat":"","ph":"","pid":0,"tid":3,"ts":1,"dur":2,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})", true},
    // Values the parsers refuse: read_flat_event refuses them too (the full parse decides).
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1234567890123456789.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5e3,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1.5,"model_chunk":0,"mb_id":0,"seq_id":0}})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":"0","tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":00,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})", false},
    {R"({"name":"forward\u002dcompute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})", false},
    {R"({"name":"forward-compute","cat":"cpu_op","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})", false},
    // A key reordered, added, missing, renamed or given twice; other whitespace: read_flat_event.
    {R"({"cat":"forward-compute","name":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"seq_id":0,"mb_id":0}})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"id":7,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0,"note":"x"}})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0},"s":"t"})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0}})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"sequence":0}})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"pid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"step":0}})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0},"args":{}})", false},
    {R"({"name":"forward-compute", "cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0} })", false},
    {R"({"name":"forward-compute","cat":"forward-compute","ph":"X","pid":0,"tid":3,"ts":1.5,"dur":2.25,"args":{"step":1,"model_chunk":0,"mb_id":0,"seq_id":0}})" "\n", true},
    // Cut by the chunk: 0 (the scanner hands it to take_value_view and the full parse).
    {kShapeBase.substr(0, kShapeBase.size() - 1), false},
    {kShapeBase.substr(0, kShapeBase.find("2.25") + 2), false},
    {kShapeBase.substr(0, kShapeBase.find("\"args\"")), false},
};

TEST(AnalyzeFastPath, EventShapesReadAsReadFlatEvent) {
  const detail::ScanSpec& spec = detail::timer_scan_spec();
  for (const ShapeCase& c : kShapeCases) {
    detail::EventShapes shapes;
    detail::RawEvent learned, again;
    ASSERT_EQ(shapes.read(spec, kShapeBase, learned), kShapeBase.size());
    ASSERT_EQ(shapes.learned(), 1u);
    ASSERT_EQ(shapes.read(spec, kShapeBase, again), kShapeBase.size());
    ASSERT_EQ(shapes.matched(), 1u);
    EXPECT_EQ(dump(again), dump(learned));
    detail::RawEvent by_shapes, by_flat;
    by_shapes.index = by_flat.index = 9;
    by_shapes.offset = by_flat.offset = 99;
    const size_t n = shapes.read(spec, c.text, by_shapes);
    EXPECT_EQ(n, detail::read_flat_event(spec, c.text, by_flat)) << c.text;
    if (n != 0) {
      EXPECT_EQ(dump(by_shapes), dump(by_flat)) << c.text;
    }
    EXPECT_EQ(by_shapes.index, 9u);
    EXPECT_EQ(by_shapes.offset, 99u);
    EXPECT_EQ(shapes.matched(), c.by_shape ? 2u : 1u) << c.text;
    // The base again: read by its shape (a refused event leaves it remembered).
    detail::RawEvent after;
    EXPECT_EQ(shapes.read(spec, kShapeBase, after), kShapeBase.size());
    EXPECT_EQ(dump(after), dump(learned)) << c.text;
  }
}

// A file of one repeated shape with one event that differs: the same ops, notes and errors as
// the full parse (read_timer_trace without the flat path).
TEST(AnalyzeFastPath, EventShapeFilesReadAsTheFullParse) {
  const auto dir = testing::temp_dir("event_shapes");
  const std::string lanes =
      R"({"name":"thread_name","ph":"M","pid":0,"tid":3,"args":{"name":"PP rank 0, TP rank 0, compute"}},)"
      "\n"
      R"({"name":"thread_name","ph":"M","pid":12,"tid":345,"args":{"name":"PP rank 1, TP rank 0, compute"}},)"
      "\n";
  for (size_t i = 0; i < kShapeCases.size(); ++i) {
    std::string t = "[" + lanes;
    for (int k = 0; k < 3; ++k) t += kShapeBase + ",\n";
    t += kShapeCases[i].text + (kShapeCases[i].text.back() == '}' ? "" : "}}}") + ",\n" + kShapeBase + "]";
    std::string result[2];
    for (bool flat : {true, false}) {
      const auto path = testing::write_file(dir / fmt::format("{}{}", i, flat ? "a" : "b") / "t.json", t);
      TimerTrace tt;
      try {
        read_timer_trace(path, tt, flat);
        for (size_t k = 0; k < tt.ops.size(); ++k) {
          const TimerOp op = tt.ops[k];
          result[flat] += fmt::format("{} {} {} {} {} {} {} {} {} {} {}\n", op.start_ns, op.dur_ns, op.offset, op.step,
                                      op.dp_rank, op.pp_rank, op.chunk, op.mb, op.seq, op.tid,
                                      tt.strings.str(op.name));
        }
        for (const std::string& note : tt.notes) result[flat] += note.substr(note.find(": ")) + "\n";
      } catch (const TraceError& e) {
        result[flat] = e.what();
        const auto at = result[flat].find(path);
        if (at != std::string::npos) result[flat].replace(at, path.size(), "FILE");
      }
    }
    EXPECT_EQ(result[1], result[0]) << kShapeCases[i].text;
  }
}

}  // namespace
}  // namespace ppstream::analyze
