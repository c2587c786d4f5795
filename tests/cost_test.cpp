// The cost model's terms counted by hand for small batches, and against the plans' own tables on
// random ones. (The file read and refused, and predictions through a sweep: cost_file_test.cpp.)
#include <gtest/gtest.h>

#include <cmath>

#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/workloads/batch_formation.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "mlaplan/sweeps/sweep.hpp"
#include "mlaplan/workloads/workload.hpp"

namespace mlaplan::cost {
namespace {

// The random-batch tests' draws: a small linear congruential generator, the same on every platform.
struct Draw {
  uint64_t state;
  uint64_t operator()(uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  }
};

// Up to 12 sequences, one in four without context and one in four without queries (it has no
// blocks, wherever it is in the batch), pages of 1-64 tokens, buffers of 256-8,255 rows.
Batch random_batch(Draw& draw, uint64_t max_context, uint64_t max_new) {
  Batch b;
  b.page_size = 1 + static_cast<uint32_t>(draw(64));
  b.max_chunks = 1;
  const uint32_t B = 1 + static_cast<uint32_t>(draw(12));
  b.input_row_offsets = {0};
  for (uint32_t i = 0; i < B; ++i) {
    b.cache_lengths.push_back(draw(4) == 0 ? 0 : static_cast<uint32_t>(draw(max_context)));
    b.input_row_offsets.push_back(b.input_row_offsets.back() + (draw(4) == 0 ? 0 : static_cast<uint32_t>(draw(max_new))));
  }
  b.buffer_token_size = 256 + static_cast<uint32_t>(draw(8000));
  return b;
}

Batch one_sequence(uint32_t cached, uint32_t fresh, uint32_t buffer) {
  Batch b;
  b.page_size = 1;
  b.buffer_token_size = buffer;
  b.max_chunks = 16;
  b.cache_lengths = {cached};
  b.input_row_offsets = {0, fresh};
  return b;
}

// Causal, 300 queries on 300 keys, tiles of 128: the tiles compute 128 x 128, 128 x 256 and, the
// last one whole, 128 x 300 pairs up to their diagonals.
TEST(CostFeatures, CausalTilesStopAtTheirDiagonal) {
  Geometry g{1, 132, 1, 128};
  Launch launch(g);
  launch.add(300, 300, true);
  Features f;
  launch.finish(f);
  EXPECT_DOUBLE_EQ(f[Term::mpair], (128.0 * 128 + 128.0 * 256 + 128.0 * 300) / 1e6);
  EXPECT_DOUBLE_EQ(f[Term::query], 300);
  // One head: the launch lasts its longest tile (38,400 pair-times) on 132 slots.
  EXPECT_NEAR(f[Term::idle_mpair], (132.0 * 38400 - 87552) / 1e6, 1e-12);
}

// Blocks run in waves. 1,280 queries on 16,384 keys, unmasked, 16 heads: 160 equal blocks on 132
// slots take two blocks' time (the last 28 run alone), not 160 / 132 of one; 128 blocks take one.
TEST(CostFeatures, EqualBlocksPastTheSlotsTakeAWholeSecondWave) {
  const Geometry g{16, 132, 1, 128};
  const double block = 128.0 * 16384;
  for (const auto& [queries, waves] : {std::pair{1280u, 2.0}, std::pair{1024u, 1.0}}) {
    Launch launch(g);
    launch.add(queries, 16384, false);
    Features f;
    launch.finish(f);
    const double work = queries / 128 * block;  // per head
    EXPECT_DOUBLE_EQ(f[Term::mpair], work / 1e6);
    EXPECT_NEAR(f[Term::idle_mpair], (waves * block * 132 / 16 - work) / 1e6, 1e-9) << queries;
  }
}

// Blocks of unequal length run in grid order: a long sequence's blocks behind 200 short ones start
// once the work ahead of them drains (16 heads, 132 slots), so they end later than ahead of them.
// Per head: 200 blocks of 128 x 1,000 pairs and one of 128 x 20,000; W = 28.16M pairs, the
// length-biased mean block sum d^2 / W = 0.349M. Behind: the last head's long block has
// 15 W + 200 x 128,000 ahead and ends at that / 132 + 2.56M - 0.349M / 2 = 5.779M; ahead of them
// it ends at 15 W / 132 + 2.56M - 0.349M / 2 = 5.585M. Both pass the work spread evenly (3.41M).
TEST(CostFeatures, LongBlocksDispatchedLastEndLater) {
  const Geometry g{16, 132, 1, 128};
  auto span_of = [&](bool long_last) {
    Launch launch(g);
    if (!long_last) launch.add(128, 20000, false);
    for (int i = 0; i < 200; ++i) launch.add(128, 1000, false);
    if (long_last) launch.add(128, 20000, false);
    return launch.span();
  };
  const double W = 200 * 128000.0 + 2.56e6, residual = (200 * 128000.0 * 128000.0 + 2.56e6 * 2.56e6) / W / 2;
  EXPECT_NEAR(span_of(true), (15 * W + 200 * 128000.0) / 132 + 2.56e6 - residual, 1e-3);
  EXPECT_NEAR(span_of(false), 15 * W / 132 + 2.56e6 - residual, 1e-3);
  EXPECT_GT(span_of(true), span_of(false) * 1.03);
  EXPECT_GT(span_of(false), 16 * W / 132);
}

// FlashAttention-3's scheduler hands the sequences out longest first, each block to the slot that
// frees first: 16 heads x 2 tiles of 28,000-key blocks take 32 slots; the second sequence's 16 x 7 =
// 112 blocks of 18,900 keys fill the other 100 slots and then wait, 12 of them, for those to free. So
// the launch ends at 2 x 18,900 keys' blocks, past the longest block and past the work spread evenly,
// whichever order the sequences are added in (the short one last fills a slot freed early); and no
// grid tile is empty.
TEST(CostFeatures, SortedSchedulerHandsOutTheLongestFirst) {
  Geometry g{16, 132, 1, 128};
  g.scheduler = mlaplan::cost::Scheduler::sorted;
  for (bool longest_first : {true, false}) {
    Launch launch(g);
    if (longest_first) launch.add(256, 28000, false);
    launch.add(896, 18900, false);
    launch.add(1, 10, false);
    if (!longest_first) launch.add(256, 28000, false);
    const double t = 128, d = t * 18900;
    EXPECT_NEAR(launch.span(), 2 * d, 1e-6) << longest_first;
    Features f;
    launch.finish(f);
    EXPECT_EQ(f[Term::empty_block], 0);
    EXPECT_NEAR(f[Term::block], 16 * (2 + 7 + 1), 1e-9);
    EXPECT_EQ(f[Term::sequence], 3);  // each sequence with queries and keys, once per launch
  }
  // Grid order (FlashAttention-2) on the same launch: the drain formula, not this schedule.
  const Geometry fa2{16, 132, 1, 128};  // a Launch keeps a pointer to its geometry
  Launch grid(fa2);
  grid.add(256, 28000, false);
  grid.add(896, 18900, false);
  EXPECT_NE(grid.span(), 2 * 128 * 18900.0);
}

// A causal sequence's tiles grow along the grid (each sees the keys up to its diagonal), so the last
// head's last tile, the longest, ends last: 8,192 queries on 8,192 + 7,513 keys (the Mooncake step
// with 7,513 cached tokens) take longer than whole waves of the mean block would.
TEST(CostFeatures, CausalTilesEndWithTheLongest) {
  const Geometry g{16, 132, 1, 128};
  Launch launch(g);
  launch.add(8192, 8192 + 7513, true);
  const double t = 128, n = 64, first = t * (7513 + t), step = t * t, last = t * (8192 + 7513);
  double W = 0, squares = 0;
  for (int i = 0; i < 63; ++i) {
    W += first + i * step;
    squares += (first + i * step) * (first + i * step);
  }
  const double ahead = 15 * (W + last) + W;  // 15 heads and the last one's 63 shorter tiles
  squares += last * last;
  W += last;
  EXPECT_NEAR(launch.span(), (ahead) / 132 + last - squares / W / 2, 1e-3 * last);
  EXPECT_GT(launch.span(), std::ceil(16 * n / 132) * W / n);  // past 8 waves of the mean block
}

// The grid is FlashAttention-2's varlen grid: the most queries' tiles for every sequence. 300 and 10
// queries (3 tiles and 1) and a sequence of keys without queries, 2 heads: blocks that compute are 2 x
// (3 + 1); the grid is 2 x 3 sequences x 3 tiles, so 18 - 8 = 10 exit at once.
TEST(CostFeatures, BlocksAndTheGridsEmptyBlocks) {
  const Geometry g{2, 132, 1, 128};
  Launch launch(g);
  launch.add(300, 500, false);
  launch.add(10, 40, true);
  launch.add_gap();
  Features f;
  launch.finish(f);
  EXPECT_DOUBLE_EQ(f[Term::block], 2 * 4);
  EXPECT_DOUBLE_EQ(f[Term::empty_block], 2 * (3 * 3 - 4));
  // A launch of every sequence's queries, whatever its keys: its grid is the batch's.
  Launch all(g);
  all.add_queries(310);
  all.set_grid(2, 300, 4);
  all.add_work(300, 500, false);  // the sequence of 10 queries has no keys in this chunk
  Features h;
  all.finish(h);
  EXPECT_DOUBLE_EQ(h[Term::block], 2 * 3);
  EXPECT_DOUBLE_EQ(h[Term::empty_block], 2 * (2 * 3 - 4));
}

// vLLM packed, 1,000 cached and 100 new tokens, a buffer of 400: three chunks (400, 400, 200). By hand:
// rows 1,000 + 100; queries 100 (new tokens' step) + 3 x 100; merges: the first chunk holds every
// query and is taken as it is, the other two merge, and the final merge: 300. Pairs in whole tiles of
// 128: 128 x 100 causal + 128 x 1,000. Idle with 16 heads on 132 slots: each launch lasts its one block.
TEST(CostFeatures, PackedByHand) {
  const Geometry g{16, 132, 1, 128};
  policies::Policy packed;
  packed.kind = policies::PolicyKind::packed;
  const Features f = policies::policy_features(one_sequence(1000, 100, 400), packed, g);
  EXPECT_DOUBLE_EQ(f[Term::batch], 1);
  EXPECT_DOUBLE_EQ(f[Term::fixed_step], 2);
  EXPECT_DOUBLE_EQ(f[Term::iteration], 3);
  EXPECT_DOUBLE_EQ(f[Term::row], 1100);
  EXPECT_DOUBLE_EQ(f[Term::query], 400);
  EXPECT_DOUBLE_EQ(f[Term::merged_query], 300);
  EXPECT_NEAR(f[Term::mpair], 128.0 * 1100 / 1e6, 1e-12);
  const double idle = (132.0 / 16 - 1) * 128 * (100 + 400 + 400 + 200);
  EXPECT_NEAR(f[Term::idle_mpair], idle / 1e6, 1e-12);
}

// Even split: every query attends every chunk. Contexts 1,000 and 300 with 50 and 10 new tokens and a
// buffer of 800 (vLLM: a share of 400 per sequence with context): chunks of (400, 300), (400), (200).
TEST(CostFeatures, EvenSplitCountsEveryQueryInEveryChunk) {
  const Geometry g{1, 132, 1, 128};
  Batch b = one_sequence(1000, 50, 800);
  b.cache_lengths = {1000, 300};
  b.input_row_offsets = {0, 50, 60};
  policies::Policy even;
  even.kind = policies::PolicyKind::even_split;
  const Features f = policies::policy_features(b, even, g);
  EXPECT_DOUBLE_EQ(f[Term::iteration], 3);
  EXPECT_DOUBLE_EQ(f[Term::row], 1300 + 60);
  EXPECT_DOUBLE_EQ(f[Term::query], 60 + 3 * 60);
  EXPECT_DOUBLE_EQ(f[Term::merged_query], 3 * 60);  // chunks 1 and 2, and the final merge
  // New tokens' step: 50 and 10 causal queries, one whole tile each; chunks: a tile over 1,000 + one over 300.
  EXPECT_NEAR(f[Term::mpair], 128.0 * (50 + 10 + 1000 + 300) / 1e6, 1e-12);
}

// Max streams cache and new tokens together: one chunk holding all of a sequence makes one causal
// launch for its queries (bottom-right over every key), and the unbounded plan is that chunk.
TEST(CostFeatures, MaxOneChunkIsItsUnboundedPlan) {
  const Geometry g{16, 132, 1, 128};
  const Batch b = one_sequence(1000, 100, 2048);
  const std::vector<uint32_t> rows{0, 1100}, cache{0};
  const std::vector<int32_t> lengths{1100};
  const Features f = policies::max_features(b, {rows.data(), cache.data(), lengths.data(), 1}, g);
  EXPECT_DOUBLE_EQ(f[Term::iteration], 1);
  EXPECT_DOUBLE_EQ(f[Term::row], 1100);
  EXPECT_DOUBLE_EQ(f[Term::query], 100);
  EXPECT_DOUBLE_EQ(f[Term::merged_query], 100);
  EXPECT_DOUBLE_EQ(f[Term::mpair], 128.0 * 1100 / 1e6);  // one whole tile up to key 1,100
  const Features u = policies::unbounded_features(b, policies::Policy{}, g);
  EXPECT_EQ(u.values, f.values);
}

// The even split's terms are counted in groups of identical chunks; counted chunk by chunk from the
// plan's own tables they must be the same, on random batches under both variants.
TEST(CostFeatures, EvenSplitGroupsEqualChunkByChunk) {
  const Geometry g{16, 132, 1, 128};
  Draw draw{12345};
  for (int trial = 0; trial < 300; ++trial) {
    const Batch b = random_batch(draw, 5000, 700);
    const uint32_t B = b.batch_size();
    for (const char* name : {"even-split/vllm", "even-split/sglang"}) {
      const policies::Policy p = policies::parse_policies(name, policies::Policy{}).front();
      if (policies::policy_outcome(b, p).refused) continue;
      const Features f = policies::policy_features(b, p, g);
      Features want = policies::new_tokens_features(b, g);
      const policies::PolicyPlan plan = policies::plan_policy(b, p);
      const uint64_t T = b.input_row_offsets.back();
      for (uint64_t c = 0; c < plan.outcome.chunks; ++c) {
        Launch launch(g);
        launch.add_queries(T);
        for (uint32_t s = 0; s < B; ++s) {
          const uint32_t rows = plan.tables.row_offset(static_cast<uint32_t>(c), s + 1) - plan.tables.row_offset(static_cast<uint32_t>(c), s);
          launch.add_work(b.input_length(s), rows, false);
        }
        launch.finish(want);
      }
      for (Term t : {Term::query, Term::mpair, Term::idle_mpair})
        EXPECT_NEAR(f[t], want[t], 1e-9 * (1 + std::abs(want[t]))) << name << " trial " << trial << " term " << coefficient_name(t);
      EXPECT_EQ(f[Term::iteration], static_cast<double>(plan.outcome.chunks)) << name << " trial " << trial;
    }
  }
}

// waves runs vLLM's packed loop over its own tables: per chunk one launch of the sequences with rows
// in it, each its own queries over its rows. Its terms, counted again from the tables it plans.
TEST(CostFeatures, WavesTermsAreItsTablesOwnLaunches) {
  for (auto sched : {cost::Scheduler::grid, cost::Scheduler::sorted, cost::Scheduler::sectioned}) {
    const Geometry g{16, 132, 1, 128, sched};
    Draw draw{4242};
    for (int trial = 0; trial < 300; ++trial) {
      const Batch b = random_batch(draw, 20000, 900);
      const uint32_t B = b.batch_size();
      const policies::Policy p = policies::parse_policies("waves", policies::Policy{}).front();
      const Features f = policies::policy_features(b, p, g);
      Features want = policies::new_tokens_features(b, g);
      const policies::PolicyPlan plan = policies::plan_policy(b, p);
      for (uint64_t c = 0; c < plan.outcome.chunks; ++c) {
        Launch launch(g);
        for (uint32_t s = 0; s < B; ++s) {
          const uint32_t rows = plan.tables.row_offset(static_cast<uint32_t>(c), s + 1) - plan.tables.row_offset(static_cast<uint32_t>(c), s);
          if (rows > 0) launch.add(b.input_length(s), rows, false);
        }
        launch.finish(want);
      }
      for (Term t : {Term::query, Term::mpair, Term::idle_mpair, Term::block, Term::sequence})
        EXPECT_NEAR(f[t], want[t], 1e-9 * (1 + std::abs(want[t]))) << "trial " << trial << " term " << coefficient_name(t);
      EXPECT_EQ(f[Term::iteration], static_cast<double>(plan.outcome.chunks)) << "trial " << trial;
    }
  }
}

// A sweep takes the lower bound's terms for a setting that streams the batch whole: they must be the
// terms the setting's own plan counts (max's from its planner's tables), on random batches under
// every policy and buffers from a page to past the batch.
TEST(CostFeatures, StreamingWholeIsTheUnboundedPlan) {
  const Geometry g{16, 132, 1, 128};
  Draw draw{777};
  size_t whole = 0, split = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Batch b;
    b.page_size = uint32_t{1} << draw(7);
    b.max_chunks = 1 + static_cast<uint32_t>(draw(8));
    const uint32_t B = 1 + static_cast<uint32_t>(draw(10));
    b.input_row_offsets = {0};
    for (uint32_t i = 0; i < B; ++i) {
      b.cache_lengths.push_back(draw(4) == 0 ? 0 : static_cast<uint32_t>(draw(3000)));
      b.input_row_offsets.push_back(b.input_row_offsets.back() + static_cast<uint32_t>(draw(400)));
    }
    b.buffer_token_size = std::max<uint32_t>(b.page_size, static_cast<uint32_t>(draw(40000)) / b.page_size * b.page_size);
    for (const policies::Policy& p : policies::parse_policies("max,packed/vllm,packed/trtllm,even-split/vllm,even-split/sglang,waves", policies::Policy{})) {
      const bool max = p.kind == policies::PolicyKind::max;
      const policies::PolicyOutcome o = policies::policy_outcome(b, p);
      const bool streams = policies::streams_whole(b, p);
      if (p.kind == policies::PolicyKind::even_split)  // the sweep reads it off the closed-form outcome
        EXPECT_EQ(streams, !o.refused && o.chunks <= 1) << p.name() << " trial " << trial;
      if (!streams) {
        split += !o.refused;
        continue;
      }
      ++whole;
      ASSERT_FALSE(o.refused) << p.name() << " trial " << trial;
      const policies::PolicyPlan plan = policies::plan_policy(b, p);
      const Features f = max ? policies::max_features(b, policies::max_tables_view(plan.tables), g)
                             : policies::policy_features(b, p, g);
      const Features u = policies::unbounded_features(b, p, g);
      EXPECT_EQ(f.values, u.values) << p.name() << " trial " << trial;
      EXPECT_EQ(static_cast<double>(plan.outcome.chunks), u[Term::iteration]) << p.name() << " trial " << trial;
    }
  }
  EXPECT_GT(whole, 300u);  // both kinds of setting are drawn often
  EXPECT_GT(split, 300u);
}

}  // namespace
}  // namespace mlaplan::cost
