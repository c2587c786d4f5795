// The small-GEMM term (features.hpp, Term::small_gemm_row): each up-projection (a chunk's rows, the new
// tokens', the whole context's) counts its rows as small where it has at most Geometry::small_gemm_rows
// of them, under every policy and path, in the layer's count, in each chunk's and in the eager walk's;
// and it changes no other term.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "test_batches.hpp"

namespace mlaplan::policies {
namespace {

using cost::Features;
using cost::Term;

// Contexts of 3,000 to 40 rows and fresh prompts at page 16, a buffer of 1,024 rows: chunks of many sizes.
Batch batch() { return test::make_batch(16, 1024, 64, {3000, 0, 700, 40, 1500, 0, 96}, {0, 30, 530, 560, 570, 650, 1650, 1660}); }

const std::vector<std::string> kPolicies{"max", "packed", "packed/trtllm", "even-split", "even-split/sglang", "waves", "waves/even"};

Features layer(const Batch& b, const Policy& p, const cost::Geometry& g, std::vector<Features>* chunks = nullptr) {
  const ChunkSink sink = [&](const Features& f, uint64_t times) { chunks->insert(chunks->end(), times, f); };
  if (p.kind == PolicyKind::max) {
    const PlanTables t = plan_fast_cpu(b);
    return chunks ? max_features_by_chunk(b, max_tables_view(t), g, sink) : max_features(b, max_tables_view(t), g);
  }
  return chunks ? policy_features_by_chunk(b, p, g, sink) : policy_features(b, p, g);
}

double small(double rows, uint64_t limit) { return rows > 0 && rows <= static_cast<double>(limit) ? rows : 0; }

TEST(SmallGemm, EachUpProjectionCountsByItsOwnRows) {
  const Batch b = batch();
  const double new_rows = b.input_row_offsets.back();
  cost::Geometry none{16, 132, 1, 128, cost::Scheduler::sectioned};
  for (const std::string& name : kPolicies) {
    SCOPED_TRACE(name);
    const Policy p = parse_policies(name, Policy{}).front();
    const Features plain = layer(b, p, none);
    EXPECT_EQ(plain[Term::small_gemm_row], 0);  // no GEMM is small without the geometry's limit
    // The chunks' sizes, then a limit between the smallest and the largest: GEMMs on both sides.
    std::vector<Features> chunks;
    layer(b, p, none, &chunks);
    ASSERT_GT(chunks.size(), 1u);
    double least = 1e300, most = 0;
    for (const Features& c : chunks) least = std::min(least, c[Term::row]), most = std::max(most, c[Term::row]);
    ASSERT_LT(least, most);
    for (const uint64_t limit : {static_cast<uint64_t>(least), static_cast<uint64_t>((least + most) / 2), uint64_t{1} << 30}) {
      SCOPED_TRACE(limit);
      cost::Geometry g = none;
      g.small_gemm_rows = limit;
      std::vector<Features> split;
      const Features f = layer(b, p, g, &split);
      ASSERT_EQ(split.size(), chunks.size());
      double want = p.kind == PolicyKind::max ? 0 : small(new_rows, limit);  // MAX streams its new tokens in its chunks
      for (size_t i = 0; i < split.size(); ++i) {
        EXPECT_EQ(split[i][Term::small_gemm_row], small(split[i][Term::row], limit)) << "chunk " << i;
        want += small(split[i][Term::row], limit);
      }
      EXPECT_DOUBLE_EQ(f[Term::small_gemm_row], want);
      // The walk without a sink (a sweep's) counts the same; nothing else moves.
      const Features direct = layer(b, p, g);
      EXPECT_DOUBLE_EQ(direct[Term::small_gemm_row], want);
      for (size_t t = 0; t < cost::kTerms; ++t)
        if (static_cast<Term>(t) != Term::small_gemm_row) EXPECT_EQ(direct.values[t], plain.values[t]) << "term " << t;
      if (limit == uint64_t{1} << 30) EXPECT_DOUBLE_EQ(f[Term::small_gemm_row], f[Term::row]);  // every GEMM small
    }
  }
}

// The whole-context path up-projects every cached and new row at once: one GEMM, small or not.
TEST(SmallGemm, TheWholeContextIsOneGemm) {
  const Batch b = batch();
  cost::Geometry g{16, 132, 1, 128, cost::Scheduler::sectioned};
  const double rows = whole_context_features(b, g)[Term::row];
  ASSERT_GT(rows, 0);
  g.small_gemm_rows = static_cast<uint64_t>(rows);
  EXPECT_EQ(whole_context_features(b, g)[Term::small_gemm_row], rows);
  g.small_gemm_rows = static_cast<uint64_t>(rows) - 1;
  EXPECT_EQ(whole_context_features(b, g)[Term::small_gemm_row], 0);
}

}  // namespace
}  // namespace mlaplan::policies
