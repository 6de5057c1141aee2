// build_job's lookup of each timer op's template entry (src/whatif/job.cpp: a dense
// [stage][type][seq] table): every op of a trace finds its own entry, and an op whose
// (stage, type, seq_id) the template lacks has no counterpart — a LiftError naming it — never
// another op's entry, also when its seq_id is past the largest of the template.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "ppstream/analyze/megatron.h"
#include "ppstream/whatif/whatif.h"
#include "whatif/job.h"

namespace ppstream::whatif {
namespace {

std::string data(const std::string& name) { return std::string(PPSTREAM_SOURCE_DIR) + "/tests/data/whatif/" + name; }

// `t` with `edit` applied to every op (by value), in the same order.
analyze::TimerTrace edited(const analyze::TimerTrace& t, const std::function<void(analyze::TimerOp&)>& edit) {
  analyze::TimerTrace out;
  out.strings = t.strings;
  out.sources = t.sources;
  for (analyze::TimerOp op : t.ops) {
    edit(op);
    out.ops.push_back(op);
  }
  return out;
}

std::string lift_error(const analyze::TimerTrace& t) {
  try {
    build_job(t, std::nullopt);
  } catch (const LiftError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(BuildJob, EveryOpFindsItsTemplateEntryAndNoOther) {
  analyze::TimerTrace t;
  analyze::read_timer_trace(data("timeline-ST.json.gz"), t);
  const Job job = build_job(t, std::nullopt);
  const Job same = build_job(edited(t, [](analyze::TimerOp&) {}), std::nullopt);
  EXPECT_EQ(same.dur_ms, job.dur_ms);
  EXPECT_EQ(same.start_ms, job.start_ms);
  ASSERT_GE(job.dp, 2);
  int32_t max_seq = 0;
  for (const TemplateOp& op : job.ops) max_seq = std::max(max_seq, op.seq);
  // The first forward-compute of DP rank 1 with a seq_id past every template op's.
  const auto past_the_largest = [&, done = false](analyze::TimerOp& op) mutable {
    if (!done && op.dp_rank == 1 && t.strings.str(op.name) == "forward-compute") {
      op.seq = max_seq + 1;
      done = true;
    }
  };
  const std::string past = lift_error(edited(t, past_the_largest));
  EXPECT_NE(past.find("DP rank 1"), std::string::npos) << past;
  EXPECT_NE(past.find("has no counterpart on DP rank 0"), std::string::npos) << past;
  // The optimizer of DP rank 1 with seq_id 1: in the table's range, but no template op has it.
  const auto second_optimizer = [&, done = false](analyze::TimerOp& op) mutable {
    if (!done && op.dp_rank == 1 && t.strings.str(op.name) == "optimizer") {
      op.seq = 1;
      done = true;
    }
  };
  const std::string opt = lift_error(edited(t, second_optimizer));
  EXPECT_NE(opt.find("optimizer #1 has no counterpart on DP rank 0"), std::string::npos) << opt;
}

}  // namespace
}  // namespace ppstream::whatif
