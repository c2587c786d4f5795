// Eager time (cost/eager.hpp): the two clocks, composed in O(1) per run of alike steps, and the
// layer's clock that policy_cost runs over the executor's launches beside its terms.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "mlaplan/cost/eager.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/plan_shape.hpp"
#include "test_batches.hpp"

namespace mlaplan {
namespace {

using cost::Clock;
using cost::LaunchKind;

TEST(EagerClock, ThenIsTheLaunchesOneByOne) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(0, 10);
  for (int trial = 0; trial < 200; ++trial) {
    Clock start, block;
    for (int i = 0; i < 3; ++i) start.launch(LaunchKind::gather, u(rng), u(rng));
    const int launches = 1 + trial % 5;
    std::vector<std::pair<double, double>> hd;
    for (int i = 0; i < launches; ++i) hd.emplace_back(u(rng), u(rng) * (trial % 3));
    for (auto [h, d] : hd) block.launch(LaunchKind::attention, h, d);
    const uint64_t times = trial % 7;
    Clock composed = start, direct = start;
    composed.then(block, times);
    for (uint64_t n = 0; n < times; ++n)
      for (auto [h, d] : hd) direct.launch(LaunchKind::attention, h, d);
    EXPECT_NEAR(composed.dev, direct.dev, 1e-9) << trial;
    EXPECT_NEAR(composed.host, direct.host, 1e-9) << trial;
    EXPECT_NEAR(composed.busy, direct.busy, 1e-9) << trial;
    EXPECT_EQ(composed.launches, direct.launches) << trial;
  }
}

TEST(EagerClock, HostBoundAndDeviceBound) {
  Clock c;
  for (int i = 0; i < 4; ++i) c.launch(LaunchKind::merge, 10, 1);  // the host sets the pace
  EXPECT_DOUBLE_EQ(c.dev, 41);
  EXPECT_DOUBLE_EQ(c.waited(), 37);
  Clock d;
  for (int i = 0; i < 4; ++i) d.launch(LaunchKind::merge, 1, 10);  // the device does
  EXPECT_DOUBLE_EQ(d.dev, 41);
  EXPECT_DOUBLE_EQ(d.waited(), 1);
}

// Random batches under every policy, on both schedulers: with no host cost the eager time is the
// graph time (the launches' device times are the terms apportioned, nothing lost or counted twice),
// with a host cost it is never below the host's own sum nor the graph time, and the terms are those
// of the walk without eager time, bit for bit.
TEST(EagerTime, DeviceTimesAddUpToTheGraphTime) {
  std::mt19937 rng(17);
  std::array<double, cost::kTerms> coef{};
  for (size_t i = 0; i < cost::kTerms; ++i) coef[i] = 0.5 + i;
  cost::HostCosts none, some;
  some.us = {3, 5, 2, 9, 4, 1};
  some.pad_v = true;
  const char* policies[] = {"packed", "even-split", "even-split/sglang", "packed/trtllm", "max", "waves"};
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t B = 1 + rng() % 6, page = trial % 2 ? 16 : 1;
    std::vector<uint32_t> cache(B), offsets{0};
    for (uint32_t i = 0; i < B; ++i) {
      cache[i] = rng() % 3 ? rng() % 5000 : 0;
      offsets.push_back(offsets.back() + rng() % 300);
    }
    const uint32_t buffer = 256 + rng() % 4000;
    for (const char* name : policies) {
      for (auto sched : {cost::Scheduler::grid, cost::Scheduler::sorted, cost::Scheduler::sectioned})
      for (uint64_t small : {uint64_t{0}, uint64_t{1000}}) {  // 1000: buffers of 256-4256 rows make GEMMs on both sides
        cost::Geometry g{16, 132, 1, 128, sched};
        g.small_gemm_rows = small;
        Batch b = test::make_batch(page, buffer, 1, cache, offsets);
        const policies::Policy p = policies::parse_policies(name, policies::Policy{})[0];
        policies::EagerTime zero(coef, none), eager(coef, some);
        cost::Features plain, f0, f1;
        if (p.kind == policies::PolicyKind::max) {
          b.max_chunks = std::max<uint32_t>(1, plan_shape(b).min_max_chunks);
          const PlanTables t = plan_fast_cpu(b);
          plain = policies::max_features(b, policies::max_tables_view(t), g);
          f0 = policies::max_features(b, policies::max_tables_view(t), g, &zero);
          f1 = policies::max_features(b, policies::max_tables_view(t), g, &eager);
        } else {
          if (policies::policy_outcome(b, p).refused) continue;
          plain = policies::policy_features(b, p, g);
          f0 = policies::policy_features(b, p, g, nullptr, nullptr, &zero);
          f1 = policies::policy_features(b, p, g, nullptr, nullptr, &eager);
        }
        EXPECT_EQ(plain.values, f0.values);
        EXPECT_EQ(plain.values, f1.values);
        double graph = 0;
        for (size_t i = 0; i < cost::kTerms; ++i) graph += coef[i] * plain.values[i];
        EXPECT_NEAR(zero.clock.dev, graph, 1e-6 * graph) << name << " trial " << trial;
        EXPECT_NEAR(eager.clock.busy, graph, 1e-6 * graph) << name << " trial " << trial;
        EXPECT_GE(eager.clock.dev, graph * (1 - 1e-9));
        EXPECT_GE(eager.clock.dev, eager.clock.host);
        double host = 0;
        for (size_t k = 0; k < cost::kLaunchKinds; ++k) host += some.us[k] * eager.clock.launches[k];
        EXPECT_NEAR(eager.clock.host, host, 1e-9 * host);
        // At most one attention launch per chunk (MAX: two) and one for the new tokens: a chunk whose
        // requests have no new tokens (vLLM packed) launches none.
        EXPECT_LE(eager.clock.launches[static_cast<size_t>(LaunchKind::attention)], 2 * plain[cost::Term::iteration] + 1);
        EXPECT_GE(eager.clock.launches[static_cast<size_t>(LaunchKind::up_projection)], plain[cost::Term::iteration]);
      }
    }
  }
}

}  // namespace
}  // namespace mlaplan
