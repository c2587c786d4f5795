// FlashAttention-3's sorted scheduler as the cost model spans it (Launch::sorted_span), checked
// against the schedule itself worked out block by block: every block, longest sequence's run first,
// to the slot that frees first (a heap), each run's blocks at their mean length as the model takes them;
// and where a causal sequence's heads run in L2 sections (Launch::sectioned_span), in the kernel's
// order: sections one after another, each tile longest first.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <random>
#include <vector>

#include "mlaplan/cost/features.hpp"

namespace mlaplan::cost {
namespace {

struct Seq {
  uint64_t queries, keys;
  bool causal;
};

// The heads FlashAttention-3 puts in one L2 section for a sequence of `keys` (flash_prepare_scheduler.cu,
// get_nheads_in_l2): the most of 16, 8, 4, 2 whose key blocks of 128 rows of 192 + 128 bf16 values fit
// 8 MiB, else 1.
uint32_t section_heads(uint64_t keys, uint32_t heads) {
  const uint64_t blocks = std::max<uint64_t>(1, (keys + 127) / 128), budget = (8u << 20) / (128 * (192 + 128) * 2);
  for (uint32_t h : {16u, 8u, 4u, 2u})
    if (h * blocks <= budget) return std::min(h, heads);
  return 1;
}

double list_schedule(const Geometry& g, const std::vector<double>& blocks) {
  std::priority_queue<double, std::vector<double>, std::greater<>> slots;
  for (uint64_t i = 0; i < g.slots(); ++i) slots.push(0.0);
  double end = 0;
  for (double d : blocks) {
    const double at = slots.top() + d;
    slots.pop();
    slots.push(at);
    end = std::max(end, at);
  }
  return end;
}

// A causal tile's pairs: its keys up to its last row's diagonal, the last tile every key.
double causal_tile(const Geometry& g, const Seq& s, uint64_t i) {
  const double t = g.tile_queries, k = static_cast<double>(s.keys);
  if (i + 1 == g.tiles(s.queries)) return t * k;
  return t * (std::max(0.0, k - static_cast<double>(s.queries)) + static_cast<double>(i + 1) * t);
}

// Every block in the kernel's order: sequences by the key blocks past their query blocks (causal) or
// their key blocks, most first, ties in batch order; a causal one section of heads after another, its
// tiles longest first, each tile to every head of the section in turn.
double kernel_order_span(const Geometry& g, std::vector<Seq> seqs) {
  auto key = [&](const Seq& s) {
    const int64_t n = static_cast<int64_t>((s.keys + 127) / 128 * 128);
    return s.causal ? n - static_cast<int64_t>(g.tiles(s.queries) * g.tile_queries) : n;
  };
  std::stable_sort(seqs.begin(), seqs.end(), [&](const Seq& a, const Seq& b) { return key(a) > key(b); });
  std::vector<double> blocks;
  for (const auto& s : seqs) {
    if (s.queries == 0 || s.keys == 0) continue;
    const uint64_t tiles = g.tiles(s.queries);
    if (!s.causal) {
      blocks.insert(blocks.end(), tiles * g.heads, static_cast<double>(g.tile_queries) * static_cast<double>(s.keys));
      continue;
    }
    const uint32_t section = section_heads(s.keys, g.heads);
    for (uint32_t h0 = 0; h0 < g.heads; h0 += section)
      for (uint64_t i = tiles; i-- > 0;) blocks.insert(blocks.end(), std::min(section, g.heads - h0), causal_tile(g, s, i));
  }
  return list_schedule(g, blocks);
}

// The runs docs/cost-model.md gives a sequence: its tiles walking all keys, or, causal, the tiles
// before the last at their mean diagonal and the last whole. A launch with a causal sequence of
// several tiles whose heads take more than one L2 section is scheduled in the kernel's order instead.
double simulated_span(const Geometry& g, const std::vector<Seq>& seqs) {
  for (const auto& s : seqs)
    if (g.scheduler == Scheduler::sectioned && s.causal && s.keys > 0 && g.tiles(s.queries) > 1 && section_heads(s.keys, g.heads) < g.heads)
      return kernel_order_span(g, seqs);
  std::vector<std::pair<double, double>> runs;  // (pairs of a block, blocks of one head)
  const double t = g.tile_queries;
  for (const auto& s : seqs) {
    if (s.queries == 0 || s.keys == 0) continue;
    const double tiles = static_cast<double>(g.tiles(s.queries)), k = static_cast<double>(s.keys);
    if (!s.causal) {
      runs.emplace_back(t * k, tiles);
      continue;
    }
    const double offset = std::max(0.0, k - static_cast<double>(s.queries));
    if (tiles > 1) runs.emplace_back(t * (offset + t) + t * t * (tiles - 2) / 2, tiles - 1);
    runs.emplace_back(t * k, 1);
  }
  std::stable_sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<double> blocks;
  for (const auto& [d, per_head] : runs) blocks.insert(blocks.end(), static_cast<size_t>(per_head * g.heads), d);
  return list_schedule(g, blocks);
}

double model_span(const Geometry& g, const std::vector<Seq>& seqs) {
  Launch launch(g);
  for (const auto& s : seqs) launch.add(s.queries, s.keys, s.causal);
  return launch.span();
}

Geometry fa3(uint32_t heads, Scheduler scheduler = Scheduler::sorted) {
  Geometry g{heads, 132, 1, 128};
  g.scheduler = scheduler;
  return g;
}

// A Mooncake step at 8 heads (Kimi-K2 at TP 8): one long causal sequence takes more than a wave, and
// the short ones' many blocks go to the slots that freed first, not after the long blocks end. Whole
// waves added to every slot put the end 23% later.
TEST(SortedSchedule, ShortBlocksFillTheSlotsThatFreeFirst) {
  const Geometry g = fa3(8);
  const std::vector<Seq> step{{2436, 11504 + 2436, true}, {4888, 512 + 4888, true}, {868, 512 + 868, true}};
  const double span = model_span(g, step);
  EXPECT_NEAR(span, simulated_span(g, step), 1e-6 * span);
  EXPECT_LT(span, 2.05 * 128.0 * 13940);  // the long sequence's two waves, and barely more
}

// Mooncake's held-out steps on an H100 at 8 heads: one sequence of 8,192 new tokens. Its K and V fill
// more than an L2 section of one head, so the kernel runs head 0's 64 tiles longest first, then head
// 1's, ...: the last head's longest tiles start late. Whole waves at the mean tile (the model before)
// said 4.0 mean tiles; every tile longest first, across heads, 3.9; the kernel's order, 4.8.
TEST(SortedSchedule, ALongCausalSequenceRunsHeadSectionBySection) {
  const Geometry g = fa3(8, Scheduler::sectioned);
  const std::vector<Seq> step{{8192, 8192, true}};
  const double mean = 128.0 * 128 * 32.5, span = model_span(g, step);
  EXPECT_NEAR(span, kernel_order_span(g, step), 1e-9 * span);
  EXPECT_GT(span, 4.75 * mean);
  std::vector<double> longest_first;
  for (uint64_t i = 64; i-- > 0;) longest_first.insert(longest_first.end(), 8, causal_tile(g, step[0], i));
  EXPECT_LT(list_schedule(g, longest_first), 3.95 * mean);
  // With 16,896 tokens before them the tiles differ less: 4.08 mean tiles, 2% past whole waves.
  const std::vector<Seq> cached{{8192, 8192 + 16896, true}};
  const double mean_cached = 128.0 * (16896 + 128 * 32.5), cached_span = model_span(g, cached);
  EXPECT_NEAR(cached_span, kernel_order_span(g, cached), 1e-9 * cached_span);
  EXPECT_GT(cached_span, 4.05 * mean_cached);
  // The sorted scheduler, as files before the sections were written: about whole waves at the mean tile.
  EXPECT_LT(model_span(fa3(8), step), 4.05 * mean);
}

// The heads of one section: 8 MiB of L2 over a key block's 128 x 320 x 2 bytes is 102 blocks.
TEST(SortedSchedule, L2SectionsHoldTheHeadsWhoseKeysFit) {
  EXPECT_EQ(l2_section_heads(1, 8), 8u);
  EXPECT_EQ(l2_section_heads(6 * 128, 128), 16u);
  EXPECT_EQ(l2_section_heads(12 * 128, 8), 8u);
  EXPECT_EQ(l2_section_heads(12 * 128 + 1, 8), 4u);
  EXPECT_EQ(l2_section_heads(25 * 128, 8), 4u);
  EXPECT_EQ(l2_section_heads(51 * 128, 8), 2u);
  EXPECT_EQ(l2_section_heads(51 * 128 + 1, 8), 1u);
  EXPECT_EQ(l2_section_heads(1 << 20, 8), 1u);
  for (uint64_t keys = 1; keys < 20000; keys += 37) EXPECT_EQ(l2_section_heads(keys, 8), section_heads(keys, 8)) << keys;
}

// Each causal launch's (tile, head) blocks, counted apart: they run their diagonal key blocks masked.
TEST(CausalBlocks, CountTheCausalSequencesTilesTimesTheHeads) {
  for (Scheduler s : {Scheduler::grid, Scheduler::sorted, Scheduler::sectioned}) {
    Geometry g = fa3(8);
    g.scheduler = s;
    Launch launch(g);
    launch.add(300, 300, true);     // 3 tiles
    launch.add(200, 1000, false);   // 2 tiles, not causal
    launch.add(129, 5000, true);    // 2 tiles
    Features f;
    launch.finish(f, 2);
    EXPECT_EQ(f[Term::causal_block], 2 * 5 * 8);
    EXPECT_EQ(f[Term::block], 2 * 7 * 8);
  }
}

TEST(SortedSchedule, EqualsTheBlockByBlockScheduleOnRandomLaunches) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 800; ++trial) {
    const Geometry g = fa3(std::vector<uint32_t>{1, 8, 16, 128}[trial % 4], trial % 8 < 4 ? Scheduler::sorted : Scheduler::sectioned);
    std::vector<Seq> seqs(1 + rng() % 12);
    for (auto& s : seqs) {
      s.queries = 1 + rng() % (trial % 3 == 0 ? 9000 : 1500);
      s.keys = s.queries + (rng() % 4 == 0 ? 0 : rng() % 60000);
      s.causal = rng() % 3 != 0;
    }
    const double want = simulated_span(g, seqs), got = model_span(g, seqs);
    ASSERT_NEAR(got, want, 1e-6 * want) << "trial " << trial;
  }
}

// Many sequences (past the 16 the model sorts on the way in), many of them short: the model stops once
// no block left can end after the latest slot frees (list scheduling's bound), and still gives the
// block-by-block schedule's end to rounding.
TEST(SortedSchedule, StopsEarlyOnlyWhereNoBlockLeftEndsLater) {
  std::mt19937_64 rng(29);
  for (int trial = 0; trial < 600; ++trial) {
    const Geometry g = fa3(std::vector<uint32_t>{8, 16, 128}[trial % 3], trial % 2 ? Scheduler::sorted : Scheduler::sectioned);
    std::vector<Seq> seqs(1 + rng() % 60);
    for (auto& s : seqs) {
      s.queries = 1 + rng() % (rng() % 4 == 0 ? 4000 : 300);
      s.keys = s.queries + rng() % (rng() % 2 == 0 ? 2000 : 40000);
      s.causal = rng() % 4 != 0;
    }
    const double want = simulated_span(g, seqs), got = model_span(g, seqs);
    ASSERT_NEAR(got, want, 1e-12 * want) << "trial " << trial << ", " << seqs.size() << " sequences";
  }
}

}  // namespace
}  // namespace mlaplan::cost
