// The reference planner on hand-checked batches: the worked example and every edge case of semantics.md.
#include <gtest/gtest.h>

#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/reference_planner.hpp"
#include "test_batches.hpp"

using namespace mlaplan;

using test::make_batch;

TEST(ReferencePlanner, WorkedExample) {
  const PlanTables t = plan_reference(test::worked_example_batch());
  const test::WorkedExamplePlan want;
  EXPECT_EQ(t.buffer_row_offsets, want.buffer_row_offsets);
  EXPECT_EQ(t.cache_offsets, want.cache_offsets);
  EXPECT_EQ(t.buffer_lengths, want.buffer_lengths);
}

TEST(ReferencePlanner, BaseOffsetOnlyDifferencesCount) {
  EXPECT_EQ(plan_reference(make_batch(128, 512, 4, {500, 0, 100}, {1000, 1009, 1209, 1229})),
            plan_reference(test::worked_example_batch()));
}

TEST(ReferencePlanner, EmptyBatchWritesZeroLengthsNotMinusOne) {
  const PlanTables t = plan_reference(make_batch(128, 512, 3, {}, {42}));
  EXPECT_EQ(t.buffer_lengths, (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(t.buffer_row_offsets, (std::vector<uint32_t>{0, 0, 0}));
  EXPECT_TRUE(t.cache_offsets.empty());
}

TEST(ReferencePlanner, AllEmptySequencesUseNoChunk) {
  const PlanTables t = plan_reference(make_batch(64, 256, 2, {0, 0}, {5, 5, 5}));
  EXPECT_EQ(t.buffer_lengths, (std::vector<int32_t>{-1, -1}));
  EXPECT_EQ(t.buffer_row_offsets, (std::vector<uint32_t>(6, 0)));
  EXPECT_EQ(t.cache_offsets, (std::vector<uint32_t>(4, 0)));
}

TEST(ReferencePlanner, OneTokenOccupiesAWholePage) {
  const PlanTables t = plan_reference(make_batch(128, 512, 1, {0}, {0, 1}));
  EXPECT_EQ(t.buffer_lengths, (std::vector<int32_t>{128}));
  EXPECT_EQ(t.buffer_row_offsets, (std::vector<uint32_t>{0, 128}));
}

TEST(ReferencePlanner, ExactMultipleEndsWithAFullChunk) {
  // L = [128, 384], E = 512 = 2 N: ceil(E/N) - 1 = 1 is the last chunk and it is full.
  const PlanTables t = plan_reference(make_batch(64, 256, 3, {100, 200}, {0, 28, 212}));
  EXPECT_EQ(t.buffer_lengths, (std::vector<int32_t>{256, 256, -1}));
  EXPECT_EQ(t.buffer_row_offsets, (std::vector<uint32_t>{0, 128, 256, 0, 0, 256, 0, 0, 0}));
  EXPECT_EQ(t.cache_offsets, (std::vector<uint32_t>{0, 0, 128, 128, 128, 384}));
}

TEST(ReferencePlanner, PageStraddlesChunksWhenBufferIsNotAPageMultiple) {
  // P = 128, N = 300: L = [256, 128], S = [0, 256]; sequence 1 splits 44 + 84 across chunks 0 and 1.
  const PlanTables t = plan_reference(make_batch(128, 300, 2, {130, 0}, {0, 0, 100}));
  EXPECT_EQ(t.buffer_lengths, (std::vector<int32_t>{300, 84}));
  EXPECT_EQ(t.buffer_row_offsets, (std::vector<uint32_t>{0, 256, 300, 0, 0, 84}));
  EXPECT_EQ(t.cache_offsets, (std::vector<uint32_t>{0, 0, 256, 44}));
}

TEST(ReferencePlanner, RefusesATotalPastCapacityNamingTheMinimum) {
  const Batch b = make_batch(128, 512, 2, {500, 0, 300}, {0, 9, 209, 229});  // E = 1152: 3 chunks
  try {
    plan_reference(b);
    FAIL() << "an infeasible batch was planned";
  } catch (const InfeasibleBatch& e) {
    EXPECT_EQ(e.min_max_chunks(), 3u);
    EXPECT_NE(std::string(e.what()).find("max_chunks: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at least 3"), std::string::npos) << e.what();
  }
}

TEST(ReferencePlanner, RefusesAnEmptySequenceStartingAtCapacity) {
  // E == M*N exactly, and the trailing empty sequence would start at row M*N: needs M + 1.
  const Batch b = make_batch(128, 512, 2, {512, 500, 0}, {0, 0, 12, 12});
  EXPECT_EQ(plan_shape(b).padded_tokens, 1024u);
  EXPECT_EQ(plan_shape(b).min_max_chunks, 3u);
  EXPECT_THROW(plan_reference(b), InfeasibleBatch);
  Batch fits = b;
  fits.max_chunks = 3;
  EXPECT_EQ(plan_reference(fits).buffer_lengths, (std::vector<int32_t>{512, 512, -1}));
  // Without the trailing empty sequence, two chunks are enough.
  const Batch at_capacity = make_batch(128, 512, 2, {512, 500}, {0, 0, 12});
  EXPECT_EQ(plan_reference(at_capacity).buffer_lengths, (std::vector<int32_t>{512, 512}));
}

TEST(ReferencePlanner, EmptySequenceInsideTheBatchAtAChunkBoundaryIsFine) {
  // S[1] = 512 = N but the batch continues: sequence 1 starts chunk 1 with no rows.
  const PlanTables t = plan_reference(make_batch(128, 512, 2, {512, 0, 10}, {0, 0, 0, 0}));
  EXPECT_EQ(t.buffer_lengths, (std::vector<int32_t>{512, 128}));
}

TEST(ReferencePlanner, LargestValuesStayExact) {
  // E = 2^32 - 1 with P = 1 and N = 2^31 - 1: three chunks, the last holding 1 row.
  const uint32_t big = 0xffffffffu;
  const PlanTables t = plan_reference(make_batch(1, 0x7fffffffu, 3, {big - 10}, {big - 10, big}));
  EXPECT_EQ(t.buffer_lengths, (std::vector<int32_t>{0x7fffffff, 0x7fffffff, 1}));
  EXPECT_EQ(t.cache_offset(2, 0), 0xfffffffeu);
  EXPECT_EQ(t.row_offset(2, 1), 1u);
}

TEST(ValidateBatch, RejectsTotalsThatDoNotFitIn32Bits) {
  Batch b;
  b.page_size = 128;
  b.buffer_token_size = 512;
  b.max_chunks = 4;
  b.cache_lengths = {0xffffff81u};
  b.input_row_offsets = {0, 0};  // padded to 2^32: one past the limit
  EXPECT_THROW(validate_batch(b), InputError);
  b.cache_lengths = {0x80000000u, 0x80000000u};
  b.input_row_offsets = {0, 0, 0};
  EXPECT_THROW(validate_batch(b), InputError);
}

TEST(ValidateBatch, RejectsABufferThatDoesNotFitInt32) {
  Batch b;
  b.buffer_token_size = 0x80000000u;
  b.cache_lengths = {};
  b.input_row_offsets = {0};
  EXPECT_THROW(validate_batch(b), InputError);
}
