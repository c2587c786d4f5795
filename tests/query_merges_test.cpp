// Merges per query row (policy_cost.hpp, QueryMerges): counted again here row by row from each
// policy's plan tables, the way the executor's schedule (python/mlaplan/prefill/schedule.py) builds
// its steps, on random batches for every engine; and summed over the rows, the cost model's
// merged_query term. tests/python/test_prefill.py compares the same count with the schedule itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <limits>
#include <cmath>
#include <map>
#include <random>

#include "mlaplan/errors.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/plan_shape.hpp"
#include "test_batches.hpp"

namespace mlaplan::policies {

namespace {

Policy named(PolicyKind kind, PackedVariant packed = PackedVariant::vllm, EvenSplitVariant even = EvenSplitVariant::vllm) {
  Policy p;
  p.kind = kind;
  p.packed = packed;
  p.even_split = even;
  return p;
}

// Each query row's merges, as the executor runs the policy's loop over these tables.
std::vector<uint64_t> by_rows(const Batch& b, const Policy& policy, const PlanTables& t) {
  const uint32_t B = b.batch_size();
  const uint64_t T = b.input_row_offsets.back() - b.input_row_offsets.front();
  std::vector<uint64_t> m(T, 0);
  auto q0 = [&](uint32_t s) { return b.input_row_offsets[s] - b.input_row_offsets.front(); };
  uint64_t context = 0;
  for (uint32_t len : b.cache_lengths) context += len;
  if (context == 0 && policy.kind != PolicyKind::max) return m;  // "no context": the new tokens' step, taken
  bool first = true;
  for (uint32_t c = 0; c < t.max_chunks; ++c) {
    if (t.buffer_lengths[c] <= 0) continue;
    std::vector<bool> in(B);
    uint64_t queries = 0;
    for (uint32_t s = 0; s < B; ++s) {
      in[s] = t.row_offset(c, s + 1) > t.row_offset(c, s);
      if (in[s]) queries += b.input_length(s);
    }
    if (policy.kind == PolicyKind::max) {  // a query at position p sees keys at positions <= p
      for (uint32_t s = 0; s < B; ++s) {
        if (!in[s]) continue;
        const uint64_t cached = b.cache_lengths[s], start = t.cache_offset(c, s);
        const uint64_t end = std::min<uint64_t>(start + t.row_offset(c, s + 1) - t.row_offset(c, s), cached + b.input_length(s));
        if (end <= start) continue;
        for (uint64_t p = cached; p < cached + b.input_length(s); ++p)
          if (p >= start) ++m[q0(s) + p - cached];
      }
    } else if ((policy.kind == PolicyKind::packed && policy.packed == PackedVariant::vllm) || policy.kind == PolicyKind::waves) {
      if (!(first && queries == T))  // the first chunk holding every query is taken as it is
        for (uint32_t s = 0; s < B; ++s)
          if (in[s])
            for (uint64_t r = 0; r < b.input_length(s); ++r) ++m[q0(s) + r];
    } else if (!(first && policy.kind == PolicyKind::even_split && policy.even_split == EvenSplitVariant::vllm)) {
      for (uint64_t& v : m) ++v;  // every query attends every chunk
    }
    first = false;
  }
  const bool vllm = (policy.kind == PolicyKind::packed && policy.packed == PackedVariant::vllm) || policy.kind == PolicyKind::waves ||
                    (policy.kind == PolicyKind::even_split && policy.even_split == EvenSplitVariant::vllm);
  const bool trtllm = policy.kind == PolicyKind::packed && policy.packed == PackedVariant::trtllm;
  if (vllm || trtllm)  // vLLM's final merge; TensorRT-LLM's new tokens' step merged into the context
    for (uint64_t& v : m) ++v;
  return m;
}

std::vector<std::pair<uint64_t, uint64_t>> histogram(const std::vector<uint64_t>& rows) {
  std::map<uint64_t, uint64_t> h;
  for (uint64_t v : rows) ++h[v];
  return {h.begin(), h.end()};
}

Batch random_batch(std::mt19937_64& rng) {
  auto pick = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  const uint32_t B = static_cast<uint32_t>(pick(1, 8));
  const uint32_t pages[] = {1, 16, 64, 128};
  const uint32_t page = pages[pick(0, 3)];
  std::vector<uint32_t> cache(B), offsets{0};
  for (uint32_t i = 0; i < B; ++i) {
    cache[i] = pick(0, 5) == 0 ? 0 : static_cast<uint32_t>(pick(1, 3000));
    offsets.push_back(offsets.back() + (pick(0, 9) == 0 ? 0 : static_cast<uint32_t>(pick(1, 40))));
  }
  const uint32_t buffer = static_cast<uint32_t>(pick(0, 1) ? pick(16, 384) : pick(385, 20000));
  return test::make_batch(page, buffer, 1, cache, offsets);
}

TEST(QueryMerges, EqualTheExecutorsCountFromThePlanTablesOnRandomBatches) {
  std::mt19937_64 rng(34);
  const std::vector<Policy> policies{named(PolicyKind::max), named(PolicyKind::packed),
                                     named(PolicyKind::packed, PackedVariant::trtllm),
                                     named(PolicyKind::even_split),
                                     named(PolicyKind::even_split, PackedVariant::vllm, EvenSplitVariant::sglang),
                                     named(PolicyKind::waves)};
  const cost::Geometry g{16, 132, 1, 128};
  size_t compared = 0, many = 0;
  for (int i = 0; i < 300; ++i) {
    Batch b = random_batch(rng);
    for (const Policy& p : policies) {
      QueryMerges q;
      PlanTables tables;
      double term = 0;
      if (p.kind == PolicyKind::max) {
        b.max_chunks = std::max<uint32_t>(1, plan_shape(b).min_max_chunks);
        if (!plan_shape(b).feasible) continue;
        tables = plan_fast_cpu(b);
        q = max_query_merges(b, max_tables_view(tables));
        term = max_features(b, max_tables_view(tables), g)[cost::Term::merged_query];
      } else {
        if (policy_outcome(b, p).refused) continue;
        tables = plan_policy(b, p).tables;
        q = policy_query_merges(b, p);
        term = policy_features(b, p, g)[cost::Term::merged_query];
      }
      const std::vector<uint64_t> rows = by_rows(b, p, tables);
      q.compact();
      ASSERT_EQ(q.counts, histogram(rows)) << p.name() << " batch " << i;
      double sum = 0;
      for (const auto& [m, r] : q.counts) sum += static_cast<double>(m * r);
      EXPECT_DOUBLE_EQ(sum, term) << p.name() << " batch " << i;  // the cost model's count, row by row
      std::vector<uint64_t> sorted = rows;
      std::sort(sorted.begin(), sorted.end());
      if (!sorted.empty()) {
        EXPECT_EQ(q.max(), sorted.back());
        const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(0.99 * static_cast<double>(sorted.size()))));
        EXPECT_EQ(q.quantile(0.99), sorted[rank - 1]);
      }
      many += q.max() >= 100;
      ++compared;
    }
  }
  EXPECT_GT(compared, 1000u);
  EXPECT_GT(many, 50u);  // small buffers: rows merged a hundred times and more
}

TEST(QueryMerges, WholeContextPathsMergeNothingAndBatchesAddUp) {
  const Batch b = test::make_batch(16, 64, 1, {9000, 40}, {0, 5, 12});
  const Policy sglang = named(PolicyKind::even_split, PackedVariant::vllm, EvenSplitVariant::sglang);
  // SGLang's loop: 64 / 2 = 32 rows of each context a chunk, ceil(9000 / 32) chunks, every row each.
  QueryMerges loop = dispatched_query_merges(b, sglang, 0);
  EXPECT_EQ(loop.max(), 282u);
  EXPECT_EQ(loop.rows(), 12u);
  // On SM90 TensorRT-LLM takes the whole context at once: nothing merged.
  QueryMerges whole = dispatched_query_merges(b, named(PolicyKind::packed, PackedVariant::trtllm), 90);
  EXPECT_EQ(whole.max(), 0u);
  EXPECT_EQ(whole.rows(), 12u);
  loop.add(whole);
  EXPECT_EQ(loop.rows(), 24u);
  EXPECT_EQ(loop.quantile(0.5), 0u);
  EXPECT_EQ(loop.quantile(0.99), 282u);
}

// A sweep adds every batch's counts into one QueryMerges, which folds them past 64K entries: the
// folded counts, small and large, interleaved with compactions and with another folded QueryMerges
// added in, give the histogram a map of every (merges, rows) gives.
TEST(QueryMerges, FoldingManyCountsKeepsTheHistogram) {
  std::mt19937_64 rng(7);
  std::map<uint64_t, uint64_t> want;
  QueryMerges q, other;
  auto draw = [&](QueryMerges& into, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      // Mostly small counts (a packed loop's), some past the dense range (an even split at small shares).
      const uint64_t m = rng() % 4 == 0 ? 4000 + rng() % 300 : rng() % 200;
      const uint64_t r = rng() % 3;  // 0 rows: ignored
      into.add(m, r);
      if (r > 0) want[m] += r;
    }
  };
  draw(q, 150000);
  EXPECT_EQ(q.max(), want.rbegin()->first);
  q.compact();
  draw(q, 70000);
  draw(other, 90000);
  q.add(other);
  uint64_t rows = 0;
  for (const auto& [m, r] : want) rows += r;
  EXPECT_EQ(q.rows(), rows);
  EXPECT_EQ(q.max(), want.rbegin()->first);
  const uint64_t rank = static_cast<uint64_t>(std::ceil(0.99 * static_cast<double>(rows)));
  uint64_t seen = 0, p99 = 0;
  for (const auto& [m, r] : want)
    if ((seen += r) >= rank) {
      p99 = m;
      break;
    }
  EXPECT_EQ(q.quantile(0.99), p99);
  q.compact();
  const std::vector<std::pair<uint64_t, uint64_t>> histogram(want.begin(), want.end());
  EXPECT_EQ(q.counts, histogram);
}

// Max priced from its plan's closed form, with no tables (the API's cost calls: a batch of 2^31
// tokens at a buffer of one row asked for 16 GiB of them), is its tables' pricing, term for term,
// clock for clock, merge for merge; past 2^24 chunks it is refused at once (issue 61).
TEST(QueryMerges, MaxWithoutTablesIsItsTablesPricing) {
  std::mt19937_64 rng(35);
  const cost::Geometry g{16, 132, 1, 128};
  std::array<double, cost::kTerms> coefficients{};
  for (size_t t = 0; t < cost::kTerms; ++t) coefficients[t] = 0.5 + static_cast<double>(t);
  cost::HostCosts host;
  for (size_t k = 0; k < cost::kLaunchKinds; ++k) host.us[k] = 3.0 + static_cast<double>(k);
  size_t compared = 0;
  for (int i = 0; i < 300; ++i) {
    Batch b = random_batch(rng);
    b.max_chunks = std::max<uint32_t>(1, plan_shape(b).min_max_chunks) + (i % 3);  // unused rows too
    if (!plan_shape(b).feasible) continue;
    const PlanTables tables = plan_fast_cpu(b);
    for (bool eager : {false, true}) {
      EagerTime e1(coefficients, host), e2(coefficients, host);
      const cost::Features a = max_features(b, max_tables_view(tables), g, eager ? &e1 : nullptr);
      const cost::Features c = max_features(b, g, eager ? &e2 : nullptr);
      for (size_t t = 0; t < cost::kTerms; ++t) ASSERT_EQ(a.values[t], c.values[t]) << "batch " << i;
      ASSERT_EQ(e1.clock.dev, e2.clock.dev);
      ASSERT_EQ(e1.clock.host, e2.clock.host);
      ASSERT_EQ(e1.clock.launches, e2.clock.launches);
    }
    QueryMerges q1 = max_query_merges(b, max_tables_view(tables)), q2 = max_query_merges(b);
    q1.compact();
    q2.compact();
    ASSERT_EQ(q1.counts, q2.counts) << "batch " << i;
    ++compared;
  }
  EXPECT_GT(compared, 200u);
  Batch big = test::make_batch(1, 1, 1, {uint32_t{1} << 31}, {0, 1});
  big.max_chunks = std::numeric_limits<uint32_t>::max();
  EXPECT_THROW(max_features(big, g), InputError);  // 2^31 chunks: refused, not 16 GiB of tables
  EXPECT_THROW(max_query_merges(big), InputError);
  big.buffer_token_size = 1u << 20;  // 2,049 chunks of a single sequence: priced, no tables
  EXPECT_EQ(max_features(big, g)[cost::Term::iteration], 2049);
  big.max_chunks = 2048;
  EXPECT_THROW(max_features(big, g), InfeasibleBatch);
}

}  // namespace
}  // namespace mlaplan::policies
