// `ppstream whatif RUN_DIR` on a `ppstream train` run directory (docs/whatif.md "Train run
// directories"): tests/data/train-run, a real 4-rank CPU run (tests/data/NOTICE.md), lifted into
// the programs of its config.yaml under its run profile (cpu-serial); and the refusals. Also the
// artifact's table handed over as columns (analyze/timer_table.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "../analyze/util.h"
#include "ppstream/analyze/timer_table.h"
#include "ppstream/engine/engine.h"
#include "ppstream/whatif/lifted.h"
#include "ppstream/whatif/whatif.h"

namespace ppstream::whatif {
namespace {
namespace fs = std::filesystem;
using analyze::testing::sample;
using analyze::testing::temp_dir;
using analyze::testing::write_file;

// The run directory without its profiler output (not read by the what-if), in a fresh temp dir.
fs::path copy_run(const std::string& name) {
  const fs::path dst = temp_dir(name) / "run";
  const fs::path src = sample("train-run");
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(src))
    if (e.path().filename() != "profile") fs::copy(e.path(), dst / e.path().filename(), fs::copy_options::recursive);
  return dst;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

std::string lift_error(const fs::path& dir) {
  try {
    analyze_ppstream_trace(dir.string());
  } catch (const LiftError& e) {
    return e.what();
  }
  return "(no LiftError)";
}

TEST(WhatIfTrainRun, LiftsTheRunsHostTracesUnderItsProfile) {
  const std::string dir = sample("train-run");
  ASSERT_TRUE(is_ppstream_trace(dir));
  WhatIfOptions o;
  o.reduce_grad = ReducePolicy::INLINE;  // the run is async
  const WhatIfResult r = analyze_ppstream_trace(dir, o);
  EXPECT_EQ(r.dp, 2);
  EXPECT_EQ(r.pp, 2);
  EXPECT_EQ(r.vpp, 2);
  ASSERT_EQ(r.steps.size(), 2u);
  // A step's measured time is its longest step marker over the ranks' host traces.
  for (const StepFigures& s : r.steps) {
    double longest = 0;
    for (int rank = 0; rank < 4; ++rank) {
      const nlohmann::json trace = read_json(fs::path(dir) / ("rank" + std::to_string(rank)) / "trace.json");
      for (const auto& e : trace["traceEvents"]) {
        if (e.value("ph", "") == "X" && e.contains("args") && e["args"].value("kind", "") == "step" &&
            e["args"]["step"].get<int>() == s.step)
          longest = std::max(longest, e["dur"].get<double>() / 1000.0);
      }
    }
    // ms from epoch-µs timestamps: doubles near 1.8e12 ms resolve ~0.25 µs
    EXPECT_NEAR(s.measured_ms, longest, 1e-3) << "step " << s.step;
    EXPECT_GT(s.resimulated_ms, 0);
    EXPECT_GT(s.ideal_ms, 0);
  }
  EXPECT_TRUE(std::isfinite(r.slowdown) && r.slowdown > 0);
  ASSERT_TRUE(r.predicted.has_value());
  EXPECT_EQ(r.predicted->policy, "inline");
  EXPECT_GT(r.predicted->measured_costs_ms, 0);
  // Verified under the profile the run was (cpu-serial), re-simulated under MCCL's (cpu-mccl).
  const bool profiles = std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.find("verified under cpu-serial, re-simulated under cpu-mccl") != std::string::npos;
  });
  EXPECT_TRUE(profiles);
}

// Re-simulation check (docs/whatif.md "Train run directories"): with its measured costs and host
// gaps, under cpu-mccl, each step comes back within 0.01 % of the measured one (measured
// 2026-12-02: -5.2e-6 and -4.7e-6; the rest is the step marker's tail after the last slice). The
// same costs under cpu-serial, whose every send waits for its receive, are far off (+4.8 % and
// +9.6 % measured; the what-if itself re-simulating under cpu-serial, with its rendezvous BATCH
// rule: +4.6 % and +9.3 %), so the bound tells the two profiles apart.
TEST(WhatIfTrainRun, ReSimulatesItsStepsUnderMcclsEagerSends) {
  constexpr double kBound = 1e-4;
  const std::string dir = sample("train-run");
  const WhatIfResult r = analyze_ppstream_trace(dir);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_LT(r.max_resim_error, kBound);
  const LiftedTrace l = lift_ppstream_trace(dir);
  EXPECT_EQ(l.platform, PlatformKind::CPU_MCCL);
  ASSERT_TRUE(l.ran_as.has_value());
  EXPECT_EQ(*l.ran_as, PlatformKind::CPU_SERIAL);
  double serial_worst = 0;
  for (size_t k = 0; k < l.steps.size(); ++k) {
    const LiftedTrace::Step& st = l.steps[k];
    ASSERT_EQ(st.host_gap_ms.size(), l.programs.programs.size());
    EXPECT_DOUBLE_EQ(resimulated_step_ms(l, k, PlatformKind::CPU_MCCL), r.steps[k].resimulated_ms);
    EXPECT_LT(std::abs(r.steps[k].resimulated_ms - st.measured_ms) / st.measured_ms, kBound) << "step " << st.step;
    // Launch delays removed: shorter than measured (the host gaps and the ranks' late starts).
    EXPECT_LT(r.steps[k].nodelay_ms, r.steps[k].resimulated_ms);
    const double serial = resimulated_step_ms(l, k, PlatformKind::CPU_SERIAL) / st.measured_ms - 1;
    serial_worst = std::max(serial_worst, serial);
  }
  EXPECT_GT(serial_worst, 100 * kBound);
}

TEST(WhatIfTrainRun, RefusesARunItCannotLift) {
  {
    const fs::path d = copy_run("wtr_noconfig");
    fs::remove(d / "config.yaml");
    EXPECT_NE(lift_error(d).find("config.yaml beside it"), std::string::npos) << lift_error(d);
  }
  {
    const fs::path d = copy_run("wtr_edited");
    std::ifstream f(d / "config.yaml");
    std::string yaml((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto at = yaml.find("micro_batch_num: 4");
    ASSERT_NE(at, std::string::npos);
    yaml.replace(at, 18, "micro_batch_num: 8");
    write_file(d / "config.yaml", yaml);
    EXPECT_NE(lift_error(d).find("programs.json: the programs that ran differ"), std::string::npos) << lift_error(d);
  }
  const auto with_run = [](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    const fs::path d = copy_run(name);
    nlohmann::json run = read_json(d / "run.json");
    edit(run);
    write_file(d / "run.json", run.dump());
    return lift_error(d);
  };
  std::string e = with_run("wtr_ascend", [](nlohmann::json& j) { j["device"] = "ascend"; });
  EXPECT_NE(e.find("host issue times"), std::string::npos) << e;
  e = with_run("wtr_node", [](nlohmann::json& j) { j["ranks"] = {2, 3}; });
  EXPECT_NE(e.find("this node ran ranks 2..3 of 4"), std::string::npos) << e;
  e = with_run("wtr_key", [](nlohmann::json& j) { j.erase("verified_under"); });
  EXPECT_NE(e.find("key \"verified_under\""), std::string::npos) << e;
  {
    const fs::path d = copy_run("wtr_rank");
    fs::remove(d / "rank2" / "trace.json");
    e = lift_error(d);
    EXPECT_NE(e.find("no host trace of rank 2"), std::string::npos) << e;
    EXPECT_NE(e.find((d / "progress" / "rank2.txt").string()), std::string::npos) << e;
  }
}

// -- the artifact's table as columns ----------------------------------------------------------

struct Table {
  std::vector<int64_t> dp{0, 1}, stage{0, 0}, step{3, 3}, seq{0, 0}, mc{0, 0}, mb{1, 1};
  std::vector<int32_t> type{0, 1};
  std::vector<double> start{0.25, 1.0000000004}, dur{0.5, 0.125};
  analyze::TimerColumns cols() const {
    analyze::TimerColumns c;
    c.source = "t.parquet";
    c.dp_rank = dp, c.stage = stage, c.step = step, c.seq_id = seq, c.mc = mc, c.mb_id = mb;
    c.optype = type;
    c.optype_names = {"forward-compute", "backward-send"};
    c.start_s = start, c.duration_s = dur;
    return c;
  }
};

std::string table_error(const Table& t) {
  analyze::TimerTrace out;
  try {
    add_timer_columns(t.cols(), out);
  } catch (const analyze::TraceError& e) {
    return e.what();
  }
  return "(no TraceError)";
}

TEST(WhatIfTable, RowsBecomeTimerOps) {
  analyze::TimerTrace out;
  add_timer_columns(Table{}.cols(), out);
  ASSERT_EQ(out.ops.size(), 2u);
  const analyze::TimerOp& b = out.ops[1];
  EXPECT_EQ(b.dp_rank, 1);
  EXPECT_EQ(b.step, 3);
  EXPECT_EQ(b.mb, 1);
  EXPECT_EQ(b.start_ns, 1'000'000'000);  // rounded to ns
  EXPECT_EQ(b.dur_ns, 125'000'000);
  EXPECT_EQ(b.offset, 1);  // the row
  EXPECT_EQ(out.strings.str(b.name), "backward-send");
  EXPECT_EQ(b.lane, analyze::TimerLane::PP_COMM);
  EXPECT_EQ(out.ops[0].lane, analyze::TimerLane::COMPUTE);
  EXPECT_EQ(out.sources, std::vector<std::string>{"t.parquet"});
}

TEST(WhatIfTable, BadRowsNameTheRowAndColumn) {
  Table t;
  t.dur[1] = -0.5;
  EXPECT_NE(table_error(t).find("t.parquet: row 1: column duration: -0.5 s"), std::string::npos) << table_error(t);
  t = Table{};
  t.type[0] = 2;
  EXPECT_NE(table_error(t).find("row 0: column optype: category 2 of 2 names"), std::string::npos) << table_error(t);
  t = Table{};
  t.mb[1] = -2;
  EXPECT_NE(table_error(t).find("row 1: column mb_id: -2 is outside -1.."), std::string::npos) << table_error(t);
  t = Table{};
  t.start[0] = std::nan("");
  EXPECT_NE(table_error(t).find("row 0: column start_ts"), std::string::npos) << table_error(t);
  t = Table{};
  t.seq.pop_back();
  EXPECT_NE(table_error(t).find("column seq_id has 1 rows, column optype 2"), std::string::npos) << table_error(t);
  t = Table{};
  t.dp.clear(), t.stage.clear(), t.step.clear(), t.seq.clear(), t.mc.clear(), t.mb.clear(), t.type.clear();
  t.start.clear(), t.dur.clear();
  EXPECT_NE(table_error(t).find("no row"), std::string::npos) << table_error(t);
}

}  // namespace
}  // namespace ppstream::whatif
