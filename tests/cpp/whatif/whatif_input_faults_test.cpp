// The what-if's input faults a fresh user found (breaker's list, faults 2, 3, 7, 8, 12, 13, 15, 16,
// 18, 19; round 2's 1-4 and 7 at the end): a re-serialised ppstream trace is still one; a trace or
// train run that lost a compute slice, or a Megatron timeline that lost a DP rank's ops, is
// refused; figures not computed are null; mixed or repeated inputs are refused with the reason.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../analyze/util.h"
#include "../cli_run.h"
#include "ppstream/analyze/analyze.h"
#include "ppstream/config/config.h"
#include "ppstream/sim/simulate.h"
#include "ppstream/tune/tune.h"
#include "ppstream/whatif/lifted.h"
#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {
namespace {
namespace fs = std::filesystem;
namespace tt = analyze::testing;

// A .json or .json.gz file's text (zlib reads a plain file as it is).
std::string text_of(const std::string& path) {
  gzFile g = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(g, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(g);
  return out;
}

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(text_of(p.string())); }

// `simulate examples/small-pp2-vpp2-hsdp.yaml --cluster --trace-every-rank --trace T.json` once
// per test binary: the trace and its T.json.config.yaml.
const fs::path& small_trace() {
  static const fs::path t = [] {
    const fs::path p = tt::temp_dir("whatif_faults") / "t.json";
    sim::SimOptions o;
    o.policies = {ReducePolicy::INLINE};
    o.cluster = true;
    o.trace_every_rank = true;
    o.trace_path = p.string();
    sim::simulate(load_config_file(std::string(PPSTREAM_SOURCE_DIR) + "/examples/small-pp2-vpp2-hsdp.yaml"), o);
    return p;
  }();
  return t;
}

// The small trace with `edit` applied, dumped with `indent` (-1: compact), config beside it.
fs::path rewritten(const std::string& name, const std::function<void(nlohmann::json&)>& edit, int indent = -1) {
  nlohmann::json d = read_json(small_trace());
  edit(d);
  const fs::path p = small_trace().parent_path() / name;
  tt::write_file(p, d.dump(indent));
  fs::copy_file(small_trace().string() + ".config.yaml", p.string() + ".config.yaml",
                fs::copy_options::overwrite_existing);
  return p;
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// Fault 2: json.dump / an indenting dump writes `"otherData": {` with spaces: still ours.
TEST(WhatIfInputFaults, AReserialisedTraceIsStillAPpstreamTrace) {
  const fs::path spaced = rewritten("spaced.json", [](nlohmann::json&) {}, 2);
  ASSERT_NE(read_json(spaced).dump(2).find("\"otherData\": {"), std::string::npos);
  EXPECT_TRUE(is_ppstream_trace(spaced.string()));
  EXPECT_EQ(ppstream_trace_of({spaced.string()}), spaced.string());
  // otherData with another key first, ppstream after it.
  const fs::path later = rewritten("later.json", [](nlohmann::json& d) {
    nlohmann::json other = {{"aaa", 1}};
    other["ppstream"] = d["otherData"]["ppstream"];
    d["otherData"] = other;
  });
  EXPECT_TRUE(is_ppstream_trace(later.string()));
  // "ppstream" elsewhere (an event's name) is not the metadata; a Megatron timeline never is.
  const fs::path elsewhere = rewritten("elsewhere.json", [](nlohmann::json& d) {
    d.erase("otherData");
    d["traceEvents"].push_back({{"name", "x"}, {"ph", "i"}, {"args", {{"ppstream", 1}}}});
  });
  EXPECT_FALSE(is_ppstream_trace(elsewhere.string()));
  EXPECT_FALSE(is_ppstream_trace(tt::sample("whatif/syn/timeline-SMALL.json.gz")));
  EXPECT_EQ(ppstream_trace_of({tt::sample("whatif/syn/timeline-SMALL.json.gz")}), std::nullopt);
  EXPECT_NO_THROW(lift_ppstream_trace(spaced.string()));
}

// Fault 3: a compute slice the config costs > 0 ms is missing: refused, naming step, rank, text.
TEST(WhatIfInputFaults, AMissingComputeSliceIsRefused) {
  const fs::path t = rewritten("drop.json", [](nlohmann::json& d) {
    auto& ev = d["traceEvents"];
    for (auto it = ev.begin(); it != ev.end(); ++it)
      if (it->value("name", "") == "r0 compute F mb1 s0") {
        ev.erase(it);
        return;
      }
    FAIL() << "no 'r0 compute F mb1 s0' slice";
  });
  const std::string e = error_of([&] { lift_ppstream_trace(t.string()); });
  EXPECT_NE(e.find("step 0: rank 0: no slice for 'r0 compute F mb1 s0'"), std::string::npos) << e;
  EXPECT_NE(e.find("cost"), std::string::npos) << e;
}

// Fault 3, train runs: the runtime draws every F / B it runs, whatever the config's costs.
TEST(WhatIfInputFaults, ATrainRunMissingAComputeSliceIsRefused) {
  const fs::path dst = tt::temp_dir("whatif_faults_run") / "run";
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(tt::sample("train-run")))
    if (e.path().filename() != "profile") fs::copy(e.path(), dst / e.path().filename(), fs::copy_options::recursive);
  const fs::path rank0 = dst / "rank0" / "trace.json";
  nlohmann::json d = read_json(rank0);
  std::string dropped;
  auto& ev = d["traceEvents"];
  for (auto it = ev.begin(); it != ev.end(); ++it)
    if (it->value("ph", "") == "X" && it->contains("args") && (*it)["args"].value("op", "") == "B") {
      dropped = (*it)["name"].get<std::string>();
      ev.erase(it);
      break;
    }
  ASSERT_FALSE(dropped.empty());
  tt::write_file(rank0, d.dump());
  const std::string e = error_of([&] { lift_ppstream_trace(dst.string()); });
  EXPECT_NE(e.find("rank 0: no slice for '" + dropped + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("runtime draws"), std::string::npos) << e;
}

// Fault 8: the last DP rank's lanes declared, its ops gone: not a smaller job.
TEST(WhatIfInputFaults, AMegatronTimelineWithoutItsLastDpRanksOpsIsRefused) {
  nlohmann::json ev = nlohmann::json::parse(text_of(tt::sample("whatif/syn/timeline-SMALL.json.gz")));
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& e : ev)
    if (!(e.value("ph", "") == "X" && e.value("pid", -1) == 1)) kept.push_back(e);
  const fs::path p = tt::temp_dir("whatif_faults_dp") / "no-dp1.json";
  tt::write_file(p, kept.dump());
  const std::string e = error_of([&] { analyze_paths({p.string()}); });
  EXPECT_NE(e.find("DP rank 1, stage 0: " + p.string() + " declares its lanes"), std::string::npos) << e;
}

// Fault 7 and 15: below the threshold M_W and M_S are not computed: null, no text line; the
// header counts slices and instructions on a ppstream trace.
TEST(WhatIfInputFaults, NotAttributedMeansNoMwNoMs) {
  const WhatIfResult r = analyze_ppstream_trace(small_trace().string());
  ASSERT_FALSE(r.attributed);
  EXPECT_FALSE(r.m_w || r.m_s || r.m_w_add || r.m_s_add);
  const nlohmann::json j = nlohmann::json::parse(to_json(r));
  for (const char* k : {"m_w", "m_s", "m_w_add", "m_s_add"}) EXPECT_TRUE(j.at(k).is_null()) << k;
  const std::string text = to_text(r);
  EXPECT_EQ(text.find("M_S ="), std::string::npos) << text;
  EXPECT_EQ(text.find("M_W ="), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("{} slices read, {} instructions per DP replica", r.ops, r.graph_ops)),
            std::string::npos)
      << text;
}

// Fault 16: on a Megatron timeline the heatmap's cells are min(S_dp, S_stage); the title says so.
TEST(WhatIfInputFaults, MegatronHeatmapTitleNamesItsScore) {
  WhatIfResult r;
  r.pp = 2;
  r.worker_score = {{1.0, 1.1}, {1.2, 1.0}};
  EXPECT_NE(to_svg(r).find("min(DP rank, stage) slowdown per worker"), std::string::npos);
  r.by_worker = {{"0,0", 1.0}};
  EXPECT_NE(to_svg(r).find("slowdown each worker alone causes"), std::string::npos);
}

// Faults 12, 13, 19: parquet in the CLI, several ppstream traces or a mixed set, a directory
// that is no run directory; tune --from-trace with the same trace twice.
TEST(WhatIfInputFaults, InputsAreSortedOutWithAReason) {
  const std::string t = small_trace().string();
  const std::string megatron = tt::sample("whatif/syn/timeline-SMALL.json.gz");
  EXPECT_NE(error_of([&] { ppstream_trace_of({t, t}); }).find("one ppstream trace at a time"), std::string::npos);
  EXPECT_NE(error_of([&] { ppstream_trace_of({megatron, t}); }).find("one ppstream trace at a time"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ppstream_trace_of({tt::sample("whatif/trace-ST.parquet")}); }).find("read from Python"),
            std::string::npos);
  const fs::path empty = tt::temp_dir("whatif_faults_dir");
  EXPECT_NE(error_of([&] { ppstream_trace_of({empty.string()}); }).find("not a run directory: no run.json"),
            std::string::npos);
  EXPECT_NE(error_of([&] { tune::lift_traces({t, (small_trace().parent_path() / "." / "t.json").string()}); })
                .find("is given twice"),
            std::string::npos);
}

// One input given twice is refused as such, by file identity (a hard link is the same file under
// another name; a ppstream trace twice used to say "2 inputs, 2 of them ppstream traces").
TEST(WhatIfInputFaults, OneFileGivenTwiceIsSaidSoWhateverItsName) {
  const fs::path dir = tt::temp_dir("whatif_twice");
  const fs::path t = dir / "t.json";
  fs::copy_file(small_trace(), t);
  fs::copy_file(small_trace().string() + ".config.yaml", t.string() + ".config.yaml");
  const fs::path linked = dir / "linked.json";
  fs::create_hard_link(t, linked);
  fs::copy_file(t.string() + ".config.yaml", linked.string() + ".config.yaml");
  const fs::path megatron = dir / "m.json.gz";
  fs::copy_file(tt::sample("whatif/syn/timeline-SMALL.json.gz"), megatron);
  const fs::path megatron_link = dir / "m2.json.gz";
  fs::create_hard_link(megatron, megatron_link);
  const fs::path symlinked = dir / "symlinked.json";
  fs::create_symlink(t, symlinked);
  // The same spelling twice is named once; two spellings of one file are both named (breaker3:
  // the message named only the second, a link the user may not know was one).
  const auto both = [](const fs::path& later, const fs::path& earlier) {
    return later.string() + " (the same file as " + earlier.string() + ") is given twice";
  };
  EXPECT_NE(error_of([&] { ppstream_trace_of({t.string(), t.string()}); }).find(t.string() + " is given twice"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ppstream_trace_of({t.string(), linked.string()}); }).find(both(linked, t)), std::string::npos);
  EXPECT_NE(error_of([&] { ppstream_trace_of({t.string(), symlinked.string()}); }).find(both(symlinked, t)),
            std::string::npos);
  EXPECT_NE(error_of([&] { tune::lift_traces({t.string(), linked.string()}); }).find(both(linked, t)), std::string::npos);
  EXPECT_NE(error_of([&] { analyze_paths({megatron.string(), megatron_link.string()}, {}); })
                .find(both(megatron_link, megatron)),
            std::string::npos);
  fs::remove_all(dir);
}

// Fault 18: `analyze` on one Megatron timeline puts its workers on the file's one clock.
TEST(WhatIfInputFaults, AnalyzeReadsAMegatronTimelineOnOneClock) {
  const analyze::AnalysisResult a = analyze::analyze_paths({tt::sample("whatif/syn/timeline-SMALL.json.gz")});
  EXPECT_EQ(a.clock_base, "global");
  for (const std::string& n : a.notes) EXPECT_EQ(n.find("could not be put on one base"), std::string::npos) << n;
}

// breaker round 2 (faults 1-4 and 7 of /work/wt/notes/breaker2_faults.md): a ppstream trace with a
// bad field or a misplaced file, and an option a ppstream trace does not read, are refused naming
// the file and what is wrong — not a bare JSON library message, not a pid wrapped to another
// rank, not a count of ranks that does not say which one is missing.
// The first work slice of rank `rank` (not an EVENT_WAIT, not metadata).
nlohmann::json& first_slice(nlohmann::json& d, int rank, const std::string& kind) {
  for (auto& e : d["traceEvents"])
    if (e.value("ph", "") == "X" && e["pid"] == rank && e["args"].value("kind", "") == kind) return e;
  throw std::logic_error("no such slice");
}

void expect_located(const std::string& e, const fs::path& file, const std::vector<std::string>& words) {
  EXPECT_NE(e.find(file.string()), std::string::npos) << e;
  EXPECT_EQ(e.find("json.exception"), std::string::npos) << e;
  for (const std::string& w : words) EXPECT_NE(e.find(w), std::string::npos) << "'" << w << "' in: " << e;
}

TEST(WhatIfTraceFields, TheUntouchedTraceIsRead) {
  EXPECT_NO_THROW(analyze_ppstream_trace(small_trace().string(), {}));
}

TEST(WhatIfTraceFields, AnArrivalDelayThatIsNoNumberNamesFileEventAndKey) {
  const fs::path p = rewritten("arrival.json", [](nlohmann::json& d) {
    first_slice(d, 0, "collective")["args"]["arrival_delay_ms"] = "266";
  });
  expect_located(error_of([&] { analyze_ppstream_trace(p.string(), {}); }), p,
                 {"traceEvents[", "args.arrival_delay_ms is a string"});
}

TEST(WhatIfTraceFields, OtherDataPpstreamThatIsNoObjectNamesFileAndKey) {
  const fs::path p = rewritten("meta.json", [](nlohmann::json& d) { d["otherData"]["ppstream"] = "simulator"; });
  expect_located(error_of([&] { analyze_ppstream_trace(p.string(), {}); }), p, {"otherData.ppstream is a string"});
  const fs::path q = rewritten("producer.json", [](nlohmann::json& d) { d["otherData"]["ppstream"]["producer"] = 3; });
  expect_located(error_of([&] { analyze_ppstream_trace(q.string(), {}); }), q, {"otherData.ppstream.producer"});
}

// A version 2 (or an unknown clock) was read as version 1, exit 0 (breaker round 2, fault 9).
TEST(WhatIfTraceFields, AnUnknownFormatVersionOrClockIsRefused) {
  const fs::path p = rewritten("version.json", [](nlohmann::json& d) { d["otherData"]["ppstream"]["version"] = 2; });
  expect_located(error_of([&] { analyze_ppstream_trace(p.string(), {}); }), p, {"otherData.ppstream.version is 2"});
  const fs::path q = rewritten("clock.json", [](nlohmann::json& d) { d["otherData"]["ppstream"]["clock"] = "bogus"; });
  expect_located(error_of([&] { analyze_ppstream_trace(q.string(), {}); }), q, {"otherData.ppstream.clock is \"bogus\""});
}

// pid 2^32 was read as rank 0 (int32 wrap): the trace was analysed as if nothing were wrong.
TEST(WhatIfTraceFields, APidBeyondInt32IsRefusedNotWrapped) {
  const fs::path p = rewritten("pid.json", [](nlohmann::json& d) { first_slice(d, 0, "compute")["pid"] = int64_t{1} << 32; });
  expect_located(error_of([&] { analyze_ppstream_trace(p.string(), {}); }), p, {"traceEvents[", "pid 4294967296"});
}

// The small trace as a `replay --trace DIR` directory: one file per rank (its events only),
// replay.inline.config.yaml beside them; `skip` leaves one rank's file out.
fs::path replay_dir(const std::string& name, int skip = -1) {
  const nlohmann::json d = read_json(small_trace());
  const fs::path dir = small_trace().parent_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int r = 0; r < 8; ++r) {
    if (r == skip) continue;
    nlohmann::json f = {{"traceEvents", nlohmann::json::array()}, {"otherData", d["otherData"]}};
    f["otherData"]["ppstream"]["ranks"] = {{std::to_string(r), d["otherData"]["ppstream"]["ranks"][std::to_string(r)]}};
    for (const auto& e : d["traceEvents"])
      if (e["pid"] == r) f["traceEvents"].push_back(e);
    tt::write_file(dir / ("replay.inline.rank" + std::to_string(r) + ".json"), f.dump());
  }
  fs::copy_file(small_trace().string() + ".config.yaml", dir / "replay.inline.config.yaml");
  return dir;
}

TEST(WhatIfTraceFields, AReplayDirectoryMissingARankNamesIt) {
  EXPECT_NO_THROW(analyze_ppstream_trace(replay_dir("complete").string(), {}));
  const fs::path dir = replay_dir("no-rank-3", 3);
  const std::string e = error_of([&] { analyze_ppstream_trace(dir.string(), {}); });
  expect_located(e, dir, {"draws 7 ranks", "no slice of rank 3", "every rank's file"});
}

TEST(WhatIfTraceFields, AReplayRankFileHoldingAnotherRanksEventsNamesTheFile) {
  const fs::path dir = replay_dir("copied");
  fs::copy_file(dir / "replay.inline.rank0.json", dir / "replay.inline.rank8.json");
  expect_located(error_of([&] { analyze_ppstream_trace(dir.string(), {}); }), dir / "replay.inline.rank8.json",
                 {"pid 0", "in the file of rank 8"});
  const fs::path zero = replay_dir("leading-zero");
  fs::rename(zero / "replay.inline.rank3.json", zero / "replay.inline.rank03.json");
  expect_located(error_of([&] { analyze_ppstream_trace(zero.string(), {}); }), zero, {"'replay.inline.rank03.json' names no rank"});
}

// breaker round 2, fault 7: `whatif T.json --evaluator engine` on a ppstream trace ran (exit 0) with the option
// unread (it chooses the Megatron path's evaluator); --check-programs was already refused so.
TEST(WhatIfTraceFields, EvaluatorOnAPpstreamTraceIsRefusedNotIgnored) {
  if (!fs::exists(testing_cli::ppstream_binary())) GTEST_SKIP() << "no ppstream binary beside the tests";
  const auto r = testing_cli::run_ppstream("whatif " + small_trace().string() + " --evaluator engine 2>&1");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("whatif --evaluator: for Megatron timer traces"), std::string::npos) << r.out;
  EXPECT_EQ(testing_cli::run_ppstream("whatif " + small_trace().string() + " >/dev/null 2>&1").rc, 0);
}

// Fault 8: a negative duration or arrival delay was refused only by the engine's cost check
// ("cost model: compute_ms of r0 #5 … is -5 ms"), naming no file or event.
TEST(WhatIfTraceFields, ANegativeDurationOrArrivalDelayNamesFileAndEvent) {
  const fs::path p = rewritten("negdur.json", [](nlohmann::json& d) { first_slice(d, 0, "compute")["dur"] = -5000.0; });
  expect_located(error_of([&] { analyze_ppstream_trace(p.string(), {}); }), p, {"traceEvents[", "dur -5000"});
  const fs::path q = rewritten("negarr.json", [](nlohmann::json& d) {
    first_slice(d, 0, "collective")["args"]["arrival_delay_ms"] = -100.0;
  });
  expect_located(error_of([&] { analyze_ppstream_trace(q.string(), {}); }), q, {"traceEvents[", "arrival_delay_ms -100"});
}

}  // namespace
}  // namespace ppstream::whatif
