// Schedule generators: orders written out by hand for small cases, plus structural properties
// (every (mb, stage) forwarded and backwarded exactly once on its rank, F before B) for many.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "ppstream/schedule/schedule.h"

namespace ppstream {

// gtest prints actions as "3F1" instead of their bytes.
void PrintTo(const ComputeAction& a, std::ostream* os) { *os << to_string(a); }

namespace {

// "0F0 1F0 0B0" → actions (parsing the notation independently of to_string).
std::vector<ComputeAction> actions(const std::string& text) {
  std::vector<ComputeAction> out;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    size_t k = tok.find_first_of("FB");
    out.push_back(ComputeAction{tok[k] == 'B', Microbatch{std::stoi(tok.substr(0, k))}, Stage{std::stoi(tok.substr(k + 1))}});
  }
  return out;
}

std::string names(const std::vector<ComputeAction>& row) {
  std::string s;
  for (const auto& a : row) s += (s.empty() ? "" : " ") + to_string(a);
  return s;
}

TEST(Schedule, ActionSpelling) {
  EXPECT_EQ(to_string(ComputeAction{true, Microbatch{15}, Stage{7}}), "15B7");
  EXPECT_EQ(to_string(ComputeAction{false, Microbatch{3}, Stage{1}}), "3F1");
}

TEST(Schedule, OneFOneBTwoRanksFourMicrobatches) {
  ComputeOrder o = schedule_1f1b(2, 4);
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[0], actions("0F0 1F0 0B0 2F0 1B0 3F0 2B0 3B0")) << names(o[0]);
  EXPECT_EQ(o[1], actions("0F1 0B1 1F1 1B1 2F1 2B1 3F1 3B1")) << names(o[1]);
}

TEST(Schedule, OneFOneBFourRanksFourMicrobatches) {
  ComputeOrder o = schedule_1f1b(4, 4);
  EXPECT_EQ(o[0], actions("0F0 1F0 2F0 3F0 0B0 1B0 2B0 3B0")) << names(o[0]);
  EXPECT_EQ(o[1], actions("0F1 1F1 2F1 0B1 3F1 1B1 2B1 3B1")) << names(o[1]);
  EXPECT_EQ(o[2], actions("0F2 1F2 0B2 2F2 1B2 3F2 2B2 3B2")) << names(o[2]);
  EXPECT_EQ(o[3], actions("0F3 0B3 1F3 1B3 2F3 2B3 3F3 3B3")) << names(o[3]);
}

TEST(Schedule, OneFOneBFewerMicrobatchesThanWarmup) {
  ComputeOrder o = schedule_1f1b(4, 2);
  EXPECT_EQ(o[0], actions("0F0 1F0 0B0 1B0"));
  EXPECT_EQ(o[2], actions("0F2 1F2 0B2 1B2"));  // warm-up min(4-1-2, 2) = 1
  EXPECT_EQ(o[3], actions("0F3 0B3 1F3 1B3"));
}

TEST(Schedule, GPipe) {
  ComputeOrder o = schedule_gpipe(2, 3);
  EXPECT_EQ(o[0], actions("0F0 1F0 2F0 0B0 1B0 2B0"));
  EXPECT_EQ(o[1], actions("0F1 1F1 2F1 0B1 1B1 2B1"));
}

// pp=2, v=2, m=4 (stages 0,2 on r0; 1,3 on r1), derived by hand from the Megatron rules:
// forward k → chunk (k%4)/2, mb (k/4)*2 + k%2; backward chunk reversed.
// r0 warm-up (2-0-1)*2 + 1*2 = 4, r1 warm-up 0*2 + 2 = 2; total m*v = 8 per rank.
TEST(Schedule, InterleavedTwoRanksTwoChunksFourMicrobatches) {
  ComputeOrder o = schedule_interleaved_1f1b(2, 2, 4);
  EXPECT_EQ(o[0], actions("0F0 1F0 0F2 1F2 "        // warm-up: k=0..3
                          "2F0 0B2 3F0 1B2 2F2 0B0 3F2 1B0 "  // (F k+4, B k) k=0..3
                          "2B2 3B2 2B0 3B0"))                 // cool-down B k=4..7
      << names(o[0]);
  EXPECT_EQ(o[1], actions("0F1 1F1 "
                          "0F3 0B3 1F3 1B3 2F1 0B1 3F1 1B1 2F3 2B3 3F3 3B3 "
                          "2B1 3B1"))
      << names(o[1]);
}

// m == pp: warm-up reaches m*v on rank 0, which then runs all forwards before all backwards.
TEST(Schedule, InterleavedAllWarmup) {
  ComputeOrder o = schedule_interleaved_1f1b(2, 2, 2);
  EXPECT_EQ(o[0], actions("0F0 1F0 0F2 1F2 0B2 1B2 0B0 1B0")) << names(o[0]);
  EXPECT_EQ(o[1], actions("0F1 1F1 0F3 0B3 1F3 1B3 0B1 1B1")) << names(o[1]);
}

// The seed-like shape pp=4, v=2 with m=8: rank 0 (stages 0 and 4), warm-up 3*2 + 4 = 10.
TEST(Schedule, InterleavedFourRanksRankZero) {
  ComputeOrder o = schedule_interleaved_1f1b(4, 2, 8);
  EXPECT_EQ(o[0], actions("0F0 1F0 2F0 3F0 0F4 1F4 2F4 3F4 4F0 5F0 "
                          "6F0 0B4 7F0 1B4 4F4 2B4 5F4 3B4 6F4 0B0 7F4 1B0 "
                          "2B0 3B0 4B4 5B4 6B4 7B4 4B0 5B0 6B0 7B0"))
      << names(o[0]);
  // Rank 3 (stages 3, 7): warm-up (v-1)*pp = 4.
  EXPECT_EQ(o[3], actions("0F3 1F3 2F3 3F3 0F7 0B7 1F7 1B7 2F7 2B7 3F7 3B7 4F3 0B3 5F3 1B3 "
                          "6F3 2B3 7F3 3B3 4F7 4B7 5F7 5B7 6F7 6B7 7F7 7B7 4B3 5B3 6B3 7B3"))
      << names(o[3]);
}

// Structural invariants that hold for every generator.
void expect_well_formed(const ComputeOrder& o, int32_t pp, int32_t v, int32_t m) {
  ASSERT_EQ(static_cast<int32_t>(o.size()), pp);
  for (int32_t r = 0; r < pp; ++r) {
    const auto& row = o[static_cast<size_t>(r)];
    EXPECT_EQ(static_cast<int32_t>(row.size()), 2 * v * m) << "rank " << r;
    std::map<std::tuple<bool, int32_t, int32_t>, size_t> pos;
    for (size_t i = 0; i < row.size(); ++i) {
      const ComputeAction& a = row[i];
      EXPECT_EQ(a.stage.v % pp, r) << to_string(a) << " on rank " << r;
      EXPECT_LT(a.stage.v, pp * v);
      EXPECT_GE(a.mb.v, 0);
      EXPECT_LT(a.mb.v, m);
      EXPECT_TRUE(pos.emplace(std::tuple{a.backward, a.mb.v, a.stage.v}, i).second) << "duplicate " << to_string(a);
    }
    for (int32_t c = 0; c < v; ++c) {
      int32_t s = c * pp + r;
      for (int32_t mb = 0; mb < m; ++mb) {
        auto f = pos.find({false, mb, s});
        auto b = pos.find({true, mb, s});
        ASSERT_TRUE(f != pos.end() && b != pos.end()) << "mb" << mb << " s" << s;
        EXPECT_LT(f->second, b->second) << "F before B for mb" << mb << " s" << s;
        if (mb > 0) {  // microbatches enter and leave each stage in order
          const size_t prev_f = pos[std::tuple{false, mb - 1, s}];
          const size_t prev_b = pos[std::tuple{true, mb - 1, s}];
          EXPECT_LT(prev_f, f->second);
          EXPECT_LT(prev_b, b->second);
        }
      }
    }
  }
}

TEST(Schedule, EveryMicrobatchOnceForwardOnceBackwardPerStage) {
  for (int32_t pp : {1, 2, 3, 4, 8})
    for (int32_t m : {1, 2, 3, 4, 5, 8, 16}) {
      SCOPED_TRACE("pp=" + std::to_string(pp) + " m=" + std::to_string(m));
      expect_well_formed(schedule_gpipe(pp, m), pp, 1, m);
      expect_well_formed(schedule_1f1b(pp, m), pp, 1, m);
      if (m % interleaved_rounds(pp, m) != 0) continue;  // flexible: m < pp, or rounds divide m
      for (int32_t v : {1, 2, 3, 4}) {
        SCOPED_TRACE("v=" + std::to_string(v));
        expect_well_formed(schedule_interleaved_1f1b(pp, v, m), pp, v, m);
      }
    }
}

TEST(Schedule, InvalidArgumentsNameTheValue) {
  try {
    schedule_interleaved_1f1b(4, 2, 9);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "schedule_interleaved_1f1b: microbatches=9 must be a multiple of its rounds max(1, microbatches / pp)=2");
  }
  try {
    schedule_1f1b(0, 4);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "schedule_1f1b: pp=0 must be >= 1");
  }
  EXPECT_THROW(schedule_gpipe(2, 0), std::invalid_argument);
  EXPECT_THROW(schedule_interleaved_1f1b(2, 0, 2), std::invalid_argument);
}

TEST(Schedule, MakeScheduleDispatches) {
  PipelineConfig cfg;
  cfg.pipeline_parallel_size = 4;
  cfg.micro_batch_num = 8;
  cfg.schedule = ScheduleKind::GPIPE;
  EXPECT_EQ(make_schedule(cfg), schedule_gpipe(4, 8));
  cfg.schedule = ScheduleKind::ONE_F_ONE_B;
  EXPECT_EQ(make_schedule(cfg), schedule_1f1b(4, 8));
  cfg.pipeline_parallel_interleave_num = 2;
  try {
    make_schedule(cfg);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "config: pipeline_parallel_interleave_num=2 needs schedule interleaved_1f1b, got 1f1b; "
                 "use interleaved_1f1b or pipeline_parallel_interleave_num=1");
  }
  cfg.schedule = ScheduleKind::INTERLEAVED_1F1B;
  EXPECT_EQ(make_schedule(cfg), schedule_interleaved_1f1b(4, 2, 8));
}

}  // namespace
}  // namespace ppstream
