// The property checker accepts the reference's plans and catches broken ones; the reference is
// checked against the properties over many random batches of every generator shape.
#include <gtest/gtest.h>

#include <map>

#include "mlaplan/check/batch_generator.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/check/property_check.hpp"
#include "mlaplan/reference_planner.hpp"
#include "test_batches.hpp"

using namespace mlaplan;

TEST(PropertyCheck, ReferenceSatisfiesThePropertiesOnRandomBatches) {
  check::BatchGenerator gen(20261129, {64, 4096, 4096, true});
  std::map<std::string, int> shapes;
  int planned = 0, refused = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string shape;
    const Batch b = gen.next(&shape);
    ASSERT_NO_THROW(validate_batch(b)) << shape;
    ++shapes[shape];
    const PlanShape s = plan_shape(b);
    if (!s.feasible) {
      EXPECT_THROW(plan_reference(b), InfeasibleBatch) << shape;
      ++refused;
      continue;
    }
    const PlanTables t = plan_reference(b);
    const check::PropertyReport r = check::check_properties(b, t);
    ASSERT_TRUE(r.ok()) << shape << ": " << r.messages.front();
    ++planned;
    // The smallest max_chunks that fits does fit, and one less does not.
    if (b.max_chunks == s.min_max_chunks && s.min_max_chunks > 1) {
      Batch tighter = b;
      --tighter.max_chunks;
      EXPECT_FALSE(plan_shape(tighter).feasible) << shape;
    }
  }
  EXPECT_EQ(shapes.size(), 11u);
  EXPECT_GT(planned, 10000);
  EXPECT_GT(refused, 500);
}

TEST(PropertyCheck, CatchesOneCorruptedCellInEachTable) {
  check::BatchGenerator gen(7, {32, 2048, 64, false});
  int checked = 0;
  for (int i = 0; i < 300; ++i) {
    const Batch b = gen.next();
    if (b.batch_size() == 0 || plan_shape(b).padded_tokens == 0 || !plan_shape(b).feasible) continue;
    const PlanTables good = plan_reference(b);
    for (int table = 0; table < 3; ++table) {
      PlanTables bad = good;
      if (table == 0) bad.buffer_row_offsets[i % bad.buffer_row_offsets.size()] += 1;
      if (table == 1) bad.cache_offsets[i % bad.cache_offsets.size()] ^= 1;
      if (table == 2) bad.buffer_lengths[i % bad.buffer_lengths.size()] -= 1;
      EXPECT_FALSE(check::check_properties(b, bad).ok()) << "table " << table;
    }
    ++checked;
  }
  EXPECT_GT(checked, 200);
}

TEST(PropertyCheck, CatchesAPlannerThatDropsThePagePadding) {
  const Batch b = test::worked_example_batch();
  Batch unpadded = b;
  unpadded.page_size = 1;
  const check::PropertyReport r = check::check_properties(b, plan_reference(unpadded));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.messages.front().find("chunk 0"), std::string::npos) << r.messages.front();
}

TEST(PropertyCheck, ReportsWrongShapesWithoutIndexingPastTheEnd) {
  Batch b;
  b.buffer_token_size = 8;
  b.max_chunks = 2;
  b.cache_lengths = {3};
  b.input_row_offsets = {0, 1};
  PlanTables t(1, 1);
  EXPECT_FALSE(check::check_properties(b, t).ok());
}
