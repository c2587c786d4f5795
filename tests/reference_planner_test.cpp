#include <gtest/gtest.h>

#include "mlaplan/reference_planner.hpp"

using namespace mlaplan;

TEST(ReferencePlanner, WorkedExample) {
  Batch b;
  b.page_size = 128;
  b.buffer_token_size = 512;
  b.max_chunks = 4;
  b.cache_lengths = {500, 0, 100};
  b.input_row_offsets = {0, 9, 209, 229};
  const PlanTables t = plan_reference(b);
  EXPECT_EQ(t.buffer_row_offsets, (std::vector<uint32_t>{0, 512, 512, 512, 0, 0, 256, 384, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(t.cache_offsets, (std::vector<uint32_t>{0, 0, 0, 512, 0, 0, 512, 256, 128, 512, 256, 128}));
  EXPECT_EQ(t.buffer_lengths, (std::vector<int32_t>{512, 384, -1, -1}));
}
