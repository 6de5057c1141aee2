// Unit-time model: grids and slots derived by hand, bubble ratios against the closed forms of
// Narayanan et al. (SC'21 §2.2) under F = B = 1 slot per virtual stage, and order errors.
#include <gtest/gtest.h>

#include "ppstream/schedule/schedule.h"

namespace ppstream {
namespace {

TEST(UnitTime, GPipeSlotsByHand) {
  // r0: 0F0@0 1F0@1; r1: 0F1@1 1F1@2 0B1@3 1B1@4; r0: 0B0 needs 0B1@3 → max(2, 4) = 4, 1B0@5.
  UnitTimeline tl = simulate_unit_time(schedule_gpipe(2, 2));
  EXPECT_EQ(tl.slot[0], (std::vector<int64_t>{0, 1, 4, 5}));
  EXPECT_EQ(tl.slot[1], (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(tl.makespan, 6);
  EXPECT_EQ(idle_slots(schedule_gpipe(2, 2)), (std::vector<int64_t>{2, 2}));
}

TEST(UnitTime, OneFOneBGridByHand) {
  // r0's 0B0 waits for r1's 0B1 (slot 2) → slot 3; 3B0 waits for 3B1 (slot 8) → slot 9.
  EXPECT_EQ(format_grid(schedule_1f1b(2, 4)),
            "   0   1   2   3   4   5   6   7   8   9\n"
            "r0 0F0 1F0 .   0B0 2F0 1B0 3F0 2B0 .   3B0\n"
            "r1 .   0F1 0B1 1F1 1B1 2F1 2B1 3F1 3B1 .\n");
}

TEST(UnitTime, InterleavedGridByHand) {
  // pp=2, v=2, m=4, worked slot by slot from the hand-written order (schedule_test.cpp):
  // makespan 18 = 2*v*m + 2*(p-1); each rank idles 2 slots.
  EXPECT_EQ(format_grid(schedule_interleaved_1f1b(2, 2, 4)),
            "   0   1   2   3   4   5   6   7   8   9   10  11  12  13  14  15  16  17\n"
            "r0 0F0 1F0 0F2 1F2 2F0 0B2 3F0 1B2 2F2 0B0 3F2 1B0 .   2B2 .   3B2 2B0 3B0\n"
            "r1 .   0F1 1F1 0F3 0B3 1F3 1B3 2F1 0B1 3F1 1B1 2F3 2B3 3F3 3B3 2B1 3B1 .\n");
}

// Closed forms (bubble / ideal compute). With F = B = 1 slot per virtual stage, a microbatch's
// full-model F+B costs 2v slots per rank, the ideal step is 2vm slots and the ramp-up plus
// ramp-down adds (p-1) slots each, i.e. bubble = 2(p-1) slots → (p-1)/m for 1F1B and GPipe and,
// because a virtual stage is 1/v of a rank's layers, (p-1)/(v m) for interleaved 1F1B.
TEST(UnitTime, BubbleRatioOneFOneBAndGPipe) {
  for (int32_t p : {1, 2, 3, 4, 8})
    for (int32_t m : {1, 2, 4, 7, 16, 32}) {
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
      double expected = static_cast<double>(p - 1) / m;
      EXPECT_DOUBLE_EQ(bubble_ratio_unit(schedule_1f1b(p, m), 1), expected);
      EXPECT_DOUBLE_EQ(bubble_ratio_unit(schedule_gpipe(p, m), 1), expected);
      // As a fraction of the step: idle / makespan = (p-1)/(m+p-1).
      ComputeOrder o = schedule_1f1b(p, m);
      int64_t makespan = simulate_unit_time(o).makespan;
      EXPECT_EQ(makespan, 2 * (m + p - 1));
      for (int64_t idle : idle_slots(o))
        EXPECT_DOUBLE_EQ(static_cast<double>(idle) / static_cast<double>(makespan),
                         static_cast<double>(p - 1) / (m + p - 1));
    }
}

TEST(UnitTime, BubbleRatioInterleaved) {
  struct Case {
    int32_t p, v, m;
    double expected;  // (p-1)/(v*m), written out
  };
  const std::vector<Case> cases = {
      {2, 2, 4, 1.0 / 8},   {2, 2, 2, 1.0 / 4},   {2, 3, 4, 1.0 / 12},  {3, 2, 3, 2.0 / 6},
      {4, 2, 8, 3.0 / 16},  {4, 2, 16, 3.0 / 32},  // the seed's PP4 × VPP2 × 16 microbatches
      {4, 4, 8, 3.0 / 32},  {8, 2, 16, 7.0 / 32},  {4, 1, 8, 3.0 / 8},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("p=" + std::to_string(c.p) + " v=" + std::to_string(c.v) + " m=" + std::to_string(c.m));
    ComputeOrder o = schedule_interleaved_1f1b(c.p, c.v, c.m);
    EXPECT_DOUBLE_EQ(bubble_ratio_unit(o, c.v), c.expected);
    EXPECT_EQ(simulate_unit_time(o).makespan, 2 * c.v * c.m + 2 * (c.p - 1));
  }
}

TEST(UnitTime, BubbleRatioRejectsWrongVpp) {
  EXPECT_THROW(bubble_ratio_unit(schedule_interleaved_1f1b(2, 2, 4), 1), std::invalid_argument);
  EXPECT_THROW(bubble_ratio_unit(ComputeOrder{}, 1), std::invalid_argument);
}

std::string sim_error(const ComputeOrder& o) {
  try {
    simulate_unit_time(o);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(UnitTime, OrderErrors) {
  auto a = [](bool b, int32_t mb, int32_t s) { return ComputeAction{b, Microbatch{mb}, Stage{s}}; };
  EXPECT_EQ(sim_error({{a(false, 0, 0), a(false, 0, 1)}, {a(false, 0, 1)}}),
            "unit-time simulation: order[r0][1] = 0F1 runs stage 1, which lives on PP rank 1 (stage % pp)");
  EXPECT_EQ(sim_error({{a(false, 0, 0), a(false, 0, 0)}}),
            "unit-time simulation: order[r0][1] = 0F0 appears more than once");
  // r0 runs 0B0 before 0F0; r1 needs 0F0 first: both block.
  EXPECT_EQ(sim_error({{a(true, 0, 0), a(false, 0, 0)}, {a(false, 0, 1), a(true, 0, 1)}}),
            "unit-time simulation: the order cannot complete; r0 at 0B0 waits for 0B1 0F0; r1 at 0F1 waits for 0F0");
  // A missing forward is reported the same way.
  EXPECT_EQ(sim_error({{a(false, 0, 0), a(true, 0, 0)}, {a(true, 0, 1)}}),
            "unit-time simulation: the order cannot complete; r0 at 0B0 waits for 0B1; r1 at 0B1 waits for 0F1");
}

}  // namespace
}  // namespace ppstream
