// FlashAttention-3's sorted scheduler as the cost model spans it (Launch::sorted_span), checked
// against the schedule itself worked out block by block: every block, longest sequence's run first,
// to the slot that frees first (a heap), each run's blocks at their mean length as the model takes them.
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

// The runs docs/cost-model.md gives a sequence: its tiles walking all keys, or, causal, the tiles
// before the last at their mean diagonal and the last whole.
double simulated_span(const Geometry& g, const std::vector<Seq>& seqs) {
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
  std::priority_queue<double, std::vector<double>, std::greater<>> slots;
  for (uint64_t i = 0; i < g.slots(); ++i) slots.push(0.0);
  double end = 0;
  for (const auto& [d, per_head] : runs)
    for (double b = 0; b < per_head * g.heads; ++b) {
      const double at = slots.top() + d;
      slots.pop();
      slots.push(at);
      end = std::max(end, at);
    }
  return end;
}

double model_span(const Geometry& g, const std::vector<Seq>& seqs) {
  Launch launch(g);
  for (const auto& s : seqs) launch.add(s.queries, s.keys, s.causal);
  return launch.span();
}

Geometry fa3(uint32_t heads) {
  Geometry g{heads, 132, 1, 128};
  g.scheduler = Scheduler::sorted;
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

TEST(SortedSchedule, EqualsTheBlockByBlockScheduleOnRandomLaunches) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 400; ++trial) {
    const Geometry g = fa3(std::vector<uint32_t>{1, 8, 16, 128}[trial % 4]);
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
  for (int trial = 0; trial < 300; ++trial) {
    const Geometry g = fa3(std::vector<uint32_t>{8, 16, 128}[trial % 3]);
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
