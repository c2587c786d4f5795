// Where a plan's time goes: policy_features_by_chunk and max_features_by_chunk (policy_cost.hpp) give
// each chunk's terms, which the pictures price chunk by chunk. The chunks' terms and the rest (the
// batch's launches, the new tokens' step, vLLM's final merge) must add up to the layer's terms, one
// per chunk the plan uses, and no chunk may take terms that belong to the rest.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "cost_examples.hpp"
#include "test_batches.hpp"

namespace mlaplan::policies {
namespace {

using cost::Features;
using cost::Term;

// Long and short contexts beside fresh prompts at page 16: several chunks under every policy, a
// context split over chunks, and a chunk that ends at a request without context (vLLM's packed loop).
Batch chunk_batch() {
  return test::make_batch(16, 1024, 64, {3000, 0, 700, 40, 1500, 0, 96}, {0, 30, 530, 560, 570, 650, 1650, 1660});
}

struct ByChunk {
  Features total;
  std::vector<Features> chunks;  // one per chunk, `times` expanded
};

ByChunk by_chunk(const Batch& b, const Policy& p, const cost::Geometry& g) {
  ByChunk out;
  const ChunkSink sink = [&](const Features& f, uint64_t times) { out.chunks.insert(out.chunks.end(), times, f); };
  if (p.kind == PolicyKind::max) {
    const PlanTables t = plan_fast_cpu(b);
    out.total = max_features_by_chunk(b, max_tables_view(t), g, sink);
  } else {
    out.total = policy_features_by_chunk(b, p, g, sink);
  }
  return out;
}

uint64_t new_rows(const Batch& b) { return b.input_row_offsets.back() - b.input_row_offsets.front(); }

TEST(ChunkTerms, ChunksAndTheRestAddUpToTheLayerUnderEveryPolicy) {
  const cost::CostModel model = cost::read_cost_model(test::kExampleCost);
  const cost::Geometry& g = model.geometry;
  const Batch b = chunk_batch();
  for (const std::string& name : std::vector<std::string>{"max", "packed", "packed/trtllm", "even-split", "even-split/sglang", "waves",
                                                          "waves/even", "guided:" + test::kExampleCost}) {
    SCOPED_TRACE(name);
    const Policy p = parse_policies(name, Policy{}).front();
    const ByChunk c = by_chunk(b, p, g);
    // The same terms as the layer's own count: the breakdown changes nothing it prices.
    const Features whole = p.kind == PolicyKind::max ? max_features(b, max_tables_view(plan_fast_cpu(b)), g)
                                                     : policy_features(b, p, g);
    for (size_t i = 0; i < cost::kTerms; ++i) EXPECT_EQ(c.total.values[i], whole.values[i]) << "term " << i;
    // One chunk each for the plan's chunks, and the layer's iterations are theirs.
    const uint64_t chunks = p.kind == PolicyKind::max ? plan_policy(b, p).outcome.chunks : policy_outcome(b, p).chunks;
    ASSERT_GT(chunks, 1u);
    EXPECT_EQ(c.chunks.size(), chunks);
    Features sum;
    for (const Features& f : c.chunks) {
      sum += f;
      EXPECT_EQ(f[Term::iteration], 1);
      EXPECT_GT(f[Term::row], 0);
      EXPECT_GT(model.predict_us(f), 0);
    }
    // The rest holds no iteration, only the new tokens' rows (max streams them in its chunks), and
    // no term below zero: a chunk that took another step's merges or launches would leave one.
    Features rest = c.total;
    for (size_t i = 0; i < cost::kTerms; ++i) {
      rest.values[i] -= sum.values[i];
      EXPECT_GE(rest.values[i], -1e-9 * std::max(1.0, std::abs(c.total.values[i]))) << "term " << i;
    }
    EXPECT_EQ(rest[Term::iteration], 0);
    EXPECT_NEAR(rest[Term::row], p.kind == PolicyKind::max ? 0.0 : static_cast<double>(new_rows(b)), 1e-6);
    // Priced, the chunks' times and the rest's add up to the layer's.
    double chunk_us = 0;
    for (const Features& f : c.chunks) chunk_us += model.predict_us(f);
    EXPECT_NEAR(chunk_us + model.predict_us(rest), model.predict_us(c.total), 1e-9 * model.predict_us(c.total));
    EXPECT_LT(chunk_us, model.predict_us(c.total));
  }
}

// vLLM's packed loop takes a first chunk that holds every query as it is: that chunk merges nothing,
// and vLLM's even split merges nothing into its chunk 0 (its final merge is the rest's).
TEST(ChunkTerms, ChunksTakenAsTheyAreMergeNothing) {
  const cost::CostModel model = cost::read_cost_model(test::kExampleCost);
  const Batch every_query_first = test::make_batch(16, 512, 8, {600}, {0, 40});  // rows [0, 512), then [512, 600)
  const ByChunk packed = by_chunk(every_query_first, parse_policies("packed", Policy{}).front(), model.geometry);
  ASSERT_EQ(packed.chunks.size(), 2u);
  EXPECT_EQ(packed.chunks[0][Term::merged_query], 0);
  EXPECT_EQ(packed.chunks[1][Term::merged_query], 40);
  const ByChunk even = by_chunk(chunk_batch(), parse_policies("even-split", Policy{}).front(), model.geometry);
  ASSERT_GT(even.chunks.size(), 1u);
  EXPECT_EQ(even.chunks[0][Term::merged_query], 0);
  EXPECT_EQ(even.chunks[1][Term::merged_query], static_cast<double>(new_rows(chunk_batch())));
}

}  // namespace
}  // namespace mlaplan::policies
