// The closed-form CPU planner against the reference: bit-identical tables on random batches, and the
// same refusal (same min_max_chunks, same message) on infeasible ones.
#include <gtest/gtest.h>

#include <random>

#include "mlaplan/errors.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/reference_planner.hpp"
#include "mlaplan/check/table_diff.hpp"
#include "test_batches.hpp"

using namespace mlaplan;

namespace {

// Random batches that hit the edges: empty sequences (trailing ones too), pages straddling
// chunks, totals that are exact multiples of N, and batches one chunk too large.
Batch random_batch(std::mt19937_64& rng) {
  auto pick = [&rng](uint32_t lo, uint32_t hi) { return std::uniform_int_distribution<uint32_t>(lo, hi)(rng); };
  Batch b;
  const uint32_t pages[] = {1, 2, 3, 16, 64, 128};
  b.page_size = pages[pick(0, 5)];
  const uint32_t B = pick(0, 3) == 0 ? pick(0, 3) : pick(1, 80);
  const uint32_t max_len = pick(0, 3) == 0 ? 4 : pick(1, 3000);
  b.input_row_offsets.push_back(pick(0, 1000));
  for (uint32_t i = 0; i < B; ++i) {
    const bool empty = pick(0, 7) == 0;
    b.cache_lengths.push_back(empty ? 0 : pick(0, max_len));
    b.input_row_offsets.push_back(b.input_row_offsets.back() + (empty ? 0 : pick(0, max_len)));
  }
  b.max_chunks = pick(1, 24);
  uint64_t E = 0;
  for (uint32_t i = 0; i < B; ++i) E += b.padded_length(i);
  switch (pick(0, 3)) {
    case 0:  // N makes E an exact multiple of the chunk size where possible
      b.buffer_token_size = E == 0 ? 1 : static_cast<uint32_t>(std::max<uint64_t>(1, E / pick(1, b.max_chunks)));
      break;
    case 1:  // about as tight as feasibility allows, sometimes just under
      b.buffer_token_size = static_cast<uint32_t>(std::max<int64_t>(1, int64_t((E + b.max_chunks - 1) / b.max_chunks) - pick(0, 1)));
      break;
    default:
      b.buffer_token_size = pick(1, 5000);
  }
  validate_batch(b);
  return b;
}

}  // namespace

TEST(FastCpuPlanner, WorkedExample) {
  const PlanTables t = plan_fast_cpu(test::worked_example_batch());
  const test::WorkedExamplePlan want;
  EXPECT_EQ(t.buffer_row_offsets, want.buffer_row_offsets);
  EXPECT_EQ(t.cache_offsets, want.cache_offsets);
  EXPECT_EQ(t.buffer_lengths, want.buffer_lengths);
}

TEST(FastCpuPlanner, MatchesTheReferenceOnRandomBatches) {
  std::mt19937_64 rng(20260514);
  int feasible = 0, infeasible = 0;
  for (int i = 0; i < 20000; ++i) {
    const Batch b = random_batch(rng);
    std::optional<PlanTables> ref;
    std::string ref_error;
    uint64_t ref_min = 0;
    try {
      ref = plan_reference(b);
    } catch (const InfeasibleBatch& e) {
      ref_error = e.what();
      ref_min = e.min_max_chunks();
    }
    if (ref) {
      ++feasible;
      const PlanTables fast = plan_fast_cpu(b);
      const check::TableDiff d = check::diff_tables(*ref, fast);
      ASSERT_TRUE(d.equal()) << "batch " << i << ": " << d.describe();
    } else {
      ++infeasible;
      try {
        plan_fast_cpu(b);
        FAIL() << "batch " << i << ": the fast planner accepted an infeasible batch: " << ref_error;
      } catch (const InfeasibleBatch& e) {
        EXPECT_EQ(e.min_max_chunks(), ref_min);
        EXPECT_EQ(std::string(e.what()), ref_error);
      }
    }
  }
  // Both sides of the feasibility line were exercised.
  EXPECT_GT(feasible, 5000);
  EXPECT_GT(infeasible, 500);
}

TEST(FastCpuPlanner, ReusesItsScratchAcrossBatchesOfDifferentSizes) {
  std::mt19937_64 rng(7);
  std::vector<uint32_t> starts;
  for (int i = 0; i < 500; ++i) {
    const Batch b = random_batch(rng);
    if (!plan_shape(b).feasible) continue;
    PlanTables t(b.batch_size(), b.max_chunks);
    std::fill(t.buffer_row_offsets.begin(), t.buffer_row_offsets.end(), 0xdeadbeefu);  // poison: every cell must be written
    std::fill(t.cache_offsets.begin(), t.cache_offsets.end(), 0xdeadbeefu);
    std::fill(t.buffer_lengths.begin(), t.buffer_lengths.end(), 0x5eed);
    plan_fast_cpu_into(b, {t.buffer_row_offsets.data(), t.cache_offsets.data(), t.buffer_lengths.data()}, starts);
    ASSERT_EQ(t, plan_reference(b)) << "batch " << i;
  }
}
