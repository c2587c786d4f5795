// guided, mlaplan's own policy: per batch the cheapest, by its cost model, of the plans vLLM's packed
// loop runs, or the whole context at once where it fits the buffer and is cheaper. Checked against
// its candidates priced one by one, against the invariants of every plan, and by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "mlaplan/check/batch_generator.hpp"
#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/policies/dispatch.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/policies/policy_check.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "mlaplan/profile/stop_request.hpp"
#include "mlaplan/sweeps/sweep.hpp"
#include "mlaplan/workloads/batch_formation.hpp"
#include "mlaplan/workloads/workload.hpp"
#include "test_batches.hpp"

namespace mlaplan::policies {

namespace {

const std::string kFa3 = std::string(MLAPLAN_SOURCE_DIR) + "/costs/h200/deepseek-v3-tp8-bf16-fa3.json";
const std::string kFa2 = std::string(MLAPLAN_SOURCE_DIR) + "/costs/h200/deepseek-v3-tp8-bf16.json";

Policy guided(const std::string& file, bool eager = false) {
  return parse_policies(std::string(eager ? "guided/eager:" : "guided:") + file, Policy{}).front();
}

// One layer's price under the model: graph (the terms' sum) or eager (the two clocks).
double price(const Batch& b, const Policy& p, const cost::CostModel& m, bool eager, bool one_shot = false) {
  std::optional<EagerTime> e;
  if (eager) e.emplace(m);
  const cost::Features f = one_shot ? whole_context_features(b, m.geometry, e ? &*e : nullptr)
                                    : dispatched_features(b, p, m.geometry, m.sm, nullptr, nullptr, e ? &*e : nullptr);
  return e ? e->clock.dev : m.predict_us(f);
}

uint64_t all_tokens(const Batch& b) {
  uint64_t t = b.input_row_offsets.back() - b.input_row_offsets.front();
  for (uint32_t len : b.cache_lengths) t += len;
  return t;
}

// Its price is the least of its candidates' (and of one shot's where the batch fits), both timings,
// both kernel stacks; its plan holds every policy's invariants.
TEST(PolicyGuided, TakesTheCheapestCandidateOnRandomBatches) {
  check::BatchGeneratorOptions options;
  options.large_batch_size = 64;
  options.max_chunks = 64;
  size_t one_shots = 0, loops = 0;
  for (const std::string& file : {kFa3, kFa2}) {
    for (bool eager : {false, true}) {
      const Policy g = guided(file, eager);
      const cost::CostModel& m = *g.guide;
      check::BatchGenerator gen(eager ? 41 : 40, options);
      for (int i = 0; i < 300; ++i) {
        const Batch b = gen.next();
        const PolicyOutcome o = policy_outcome(b, g);
        if (o.refused || o.chunks > 2048) continue;
        double least = std::numeric_limits<double>::infinity();
        for (const Policy& c : guided_candidates(g)) {
          const PolicyOutcome co = policy_outcome(b, c);
          if (!co.refused) least = std::min(least, price(b, c, m, eager));
        }
        if (all_tokens(b) <= b.buffer_token_size) least = std::min(least, price(b, g, m, eager, true));
        const double mine = price(b, g, m, eager);
        ASSERT_NEAR(mine, least, 1e-9 * least) << "batch " << i << " of " << file;
        if (!policy_outcome(b, Policy{PolicyKind::packed}).refused)
          ASSERT_LE(mine, price(b, Policy{PolicyKind::packed}, m, eager) * (1 + 1e-12));
        const bool shot = engine_path(b, g, m.sm) == EnginePath::one_shot;
        ASSERT_TRUE(!shot || all_tokens(b) <= b.buffer_token_size) << "one shot past the buffer";
        (shot ? one_shots : loops)++;
        const PolicyPlan plan = plan_policy(b, g);
        const InvariantReport r = check_policy_invariants(b, g, plan.tables, plan.outcome.chunks);
        ASSERT_TRUE(r.ok()) << (r.messages.empty() ? "" : r.messages.front());
      }
    }
  }
  EXPECT_GT(one_shots, 20u);  // both paths exercised
  EXPECT_GT(loops, 400u);
}

// Short contexts that fit the buffer whole: one launch over cached and new tokens beats a loop that
// attends the new tokens apart and merges; past the buffer it is never taken.
TEST(PolicyGuided, RunsOneShotWhereTheBatchFitsAndThatIsCheaper) {
  const Policy g = guided(kFa3);
  const Batch fits = test::make_batch(64, 16384, 16, {1024, 2048, 512}, {0, 100, 300, 400});
  EXPECT_EQ(engine_path(fits, g, 90), EnginePath::one_shot);
  EXPECT_NE(path_reason(fits, g, 90).find("whole context at once"), std::string::npos);
  const Batch past = test::make_batch(64, 4096, 16, {1024, 2048, 512}, {0, 100, 300, 4000});
  EXPECT_EQ(engine_path(past, g, 90), EnginePath::chunked);
}

// waves/even streams the even split's pieces; only the loop that runs them differs.
TEST(PolicyGuided, WavesEvenHasTheEvenSplitsPieces) {
  const Batch b = test::make_batch(64, 8192, 64, {30000, 700, 9000, 0, 128}, {0, 10, 20, 30, 40, 50});
  Policy even_split{PolicyKind::even_split};
  const PolicyPlan e = plan_policy(b, even_split);
  const PolicyPlan w = plan_policy(b, parse_policies("waves/even", Policy{}).front());
  EXPECT_EQ(w.outcome.chunks, e.outcome.chunks);
  EXPECT_EQ(w.tables.buffer_row_offsets, e.tables.buffer_row_offsets);
  EXPECT_EQ(w.tables.cache_offsets, e.tables.cache_offsets);
  EXPECT_EQ(parse_policies("waves/h128-s132-even", Policy{}).front().name(), "waves/h128-s132-even");
  EXPECT_THROW(plan_policy(test::make_batch(64, 64, 16, {100, 100}, {0, 1, 2}), parse_policies("waves/even", Policy{}).front()),
               InputError);  // a share of 0 pages, as vLLM's even split refuses
}

TEST(PolicyGuided, Names) {
  const Policy g = guided(kFa3);
  EXPECT_EQ(g.name(), "guided:" + kFa3);
  EXPECT_EQ(guided(kFa3, true).name(), "guided/eager:" + kFa3);
  EXPECT_EQ(parse_policies("GUIDED:" + kFa3, Policy{}).front().guide_path, kFa3);  // the path keeps its case
  std::vector<Policy> plain = parse_policies("packed,guided", Policy{});
  EXPECT_EQ(plain.back().name(), "guided");
  EXPECT_THROW(attach_guide(plain, nullptr, false), InputError);
  attach_guide(plain, g.guide, true);
  EXPECT_TRUE(plain.back().guide_eager);
  EXPECT_THROW(parse_policies("guided/fast:" + kFa3, Policy{}), InputError);
  EXPECT_THROW(parse_policies("packed:" + kFa3, Policy{}), InputError);
  try {
    parse_policies("guided:/nonexistent/cost.json", Policy{});
    FAIL() << "a missing cost file was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/cost.json"), std::string::npos) << e.what();
  }
  // Without a model there is nothing to choose by: planning says so rather than guessing.
  EXPECT_THROW(plan_policy(test::make_batch(64, 4096, 16, {1000}, {0, 10}), Policy{PolicyKind::guided}), InputError);
}

}  // namespace
// The choice's own terms and outcome are its plan's: a sweep reuses them instead of walking again.
TEST(PolicyGuided, ChoiceCarriesItsPlansTermsAndOutcome) {
  check::BatchGeneratorOptions options;
  options.max_chunks = 64;
  for (bool eager : {false, true}) {
    const Policy g = guided(kFa2, eager);
    check::BatchGenerator gen(43, options);
    for (int i = 0; i < 200; ++i) {
      const Batch b = gen.next();
      const GuidedChoice c = guided_choice(b, g);
      if (!c.priced || c.one_shot) continue;
      std::optional<EagerTime> e;
      if (eager) e.emplace(*g.guide);
      const cost::Features f = policy_features(b, c.plan, g.guide->geometry, nullptr, nullptr, e ? &*e : nullptr);
      for (size_t t = 0; t < cost::kTerms; ++t) ASSERT_EQ(c.terms[static_cast<cost::Term>(t)], f[static_cast<cost::Term>(t)]);
      if (e) ASSERT_EQ(c.clock.dev, e->clock.dev);
      const PolicyOutcome o = policy_outcome(b, c.plan);
      ASSERT_EQ(c.outcome.chunks, o.chunks);
      ASSERT_EQ(c.outcome.largest_chunk, o.largest_chunk);
      ASSERT_EQ(plan_policy(b, g).tables.buffer_row_offsets, plan_policy(b, c.plan).tables.buffer_row_offsets);
    }
  }
}

// A sweep prices guided (choosing once per batch and buffer) and waves/even (at a buffer that streams
// every context whole, from the lower bound's terms) as each batch alone prices them, as run does.
TEST(PolicyGuided, SweepRowsAreEachBatchsOwnPrice) {
  auto source = workloads::preset_source(workloads::find_workload_preset("coding-agent"), 3);
  const std::vector<Batch> batches =
      workloads::form_batches(*source, workloads::BatchFormation{}, workloads::BatchSettings{}, 60, 3);
  const cost::CostModel m = cost::read_cost_model(kFa2);
  for (bool eager : {false, true}) {
    sweeps::SweepGrid grid;
    grid.buffer_tokens = {4096, 65536, 1u << 20};
    grid.max_chunks = {16};
    grid.policies = parse_policies("guided,waves/even", Policy{});
    grid.costs = {m};
    grid.eager = eager;
    attach_guide(grid.policies, grid.costs, eager);
    sweeps::take_cost_models(grid, false, "sweep");
    const sweeps::SweepResult r = sweeps::run_sweep(batches, grid);
    ASSERT_EQ(r.rows.size(), 6u);
    for (const sweeps::SweepRow& row : r.rows) {
      double sum = 0;
      for (Batch b : batches) {
        b.buffer_token_size = row.buffer_tokens;
        std::optional<EagerTime> e;
        if (eager) e.emplace(m);
        const cost::Features f = dispatched_features(b, row.policy, m.geometry, m.sm, nullptr, nullptr, e ? &*e : nullptr);
        sum += e ? e->clock.dev : m.predict_us(f);
      }
      const double mean = sum / static_cast<double>(batches.size());
      EXPECT_NEAR(row.time->mean_us, mean, 1e-5 * mean) << row.setting() << (eager ? " eager" : " graph");
    }
  }
}

// Ctrl-C inside one batch's pricing: a guided choice over 2^18 sequences (its widest waves candidate
// one group through 4,000 chunks, about 10 s) stops within a second of the request (issue 61).
TEST(PolicyGuided, StopsInsideOneLargeChoice) {
  const Policy g = guided(kFa2);
  Batch b;
  b.page_size = 64;
  b.buffer_token_size = 65536;
  b.max_chunks = 1;
  b.cache_lengths.assign(size_t{1} << 18, 1000);
  for (uint32_t i = 0; i <= b.cache_lengths.size(); ++i) b.input_row_offsets.push_back(i);
  using Clock = std::chrono::steady_clock;
  Clock::time_point asked;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    asked = Clock::now();
    profile::request_stop();
  });
  bool interrupted = false;
  try {
    guided_choice(b, g);
  } catch (const Interrupted&) {
    interrupted = true;
  }
  const Clock::time_point ended = Clock::now();
  stopper.join();
  profile::clear_stop_request();
  EXPECT_TRUE(interrupted);
  EXPECT_LT(std::chrono::duration<double>(ended - asked).count(), 1.0);
}

// The choice prices a candidate whose plan an earlier one has only once (issue 61: a sweep's guided
// cost 6x the cost model's): the plan, path and terms are those of pricing all nine in order, on
// random batches at buffers from a page to past the batch, and on the bundled workloads' batches.
TEST(PolicyGuided, ChoosesAsPricingEveryCandidate) {
  auto unoptimised = [](const Batch& b, const Policy& g, size_t& index, bool& one_shot, cost::Features& terms) {
    const cost::CostModel& m = *g.guide;
    std::optional<EagerTime> e;
    if (g.guide_eager) e.emplace(m);
    const std::vector<Policy> candidates = guided_candidates(g);
    double best = std::numeric_limits<double>::infinity();
    index = 1;
    one_shot = false;
    for (size_t j = 0; j < candidates.size(); ++j) {
      if (policy_outcome(b, candidates[j]).refused) continue;
      const cost::Features f = policy_features(b, candidates[j], m.geometry, nullptr, nullptr, e ? &*e : nullptr);
      const double us = e ? e->clock.dev : m.predict_us(f);
      if (us < best) {
        best = us;
        index = j;
        terms = f;
      }
    }
    uint64_t context = 0;
    for (uint32_t len : b.cache_lengths) context += len;
    if (context + (b.input_row_offsets.back() - b.input_row_offsets.front()) <= b.buffer_token_size) {
      const cost::Features whole = whole_context_features(b, m.geometry, e ? &*e : nullptr);
      one_shot = (e ? e->clock.dev : m.predict_us(whole)) < best;
      if (one_shot) index = 1;  // its plan then is waves, which plans every batch
    }
  };
  std::vector<Batch> batches;  // the workloads' after the random ones: from `workload_from` on
  check::BatchGeneratorOptions options;
  options.large_batch_size = 64;
  options.max_chunks = 64;
  check::BatchGenerator gen(44, options);
  for (int i = 0; i < 400; ++i) batches.push_back(gen.next());
  const size_t workload_from = batches.size();
  for (const char* workload : {"azure-code", "azure-conv", "mooncake-conv", "mooncake-synthetic", "coding-agent", "coding-agent-claude", "short-chat"}) {
    auto source = workloads::preset_source(workloads::find_workload_preset(workload), 5);
    for (const Batch& b : workloads::form_batches(*source, workloads::BatchFormation{}, workloads::BatchSettings{}, 60, 5))
      batches.push_back(b);
  }
  size_t checked = 0, loops = 0;
  for (bool eager : {false, true}) {
    const Policy g = guided(kFa2, eager);
    const std::vector<Policy> candidates = guided_candidates(g);
    for (size_t i = 0; i < batches.size(); ++i) {
      Batch b = batches[i];
      for (uint32_t n : {64u, 1024u, 4096u, 16384u, 65536u, 1u << 20}) {
        if (i >= workload_from && n < 4096) continue;  // their long contexts through small buffers: minutes
        b.buffer_token_size = std::max(n, b.page_size);
        uint64_t context = 0;
        for (uint32_t len : b.cache_lengths) context += len;
        if (context / b.buffer_token_size > 2048) continue;  // the nine walks of thousands of chunks: seconds each
        size_t index = 0;
        bool one_shot = false;
        cost::Features terms;
        unoptimised(b, g, index, one_shot, terms);
        const GuidedChoice c = guided_choice(b, g);
        ASSERT_EQ(c.one_shot, one_shot) << "buffer " << n;
        ASSERT_EQ(c.plan.name(), candidates[index].name()) << "buffer " << n;
        ASSERT_EQ(c.plan.waves_fill, candidates[index].waves_fill) << "buffer " << n;
        for (size_t t = 0; t < cost::kTerms; ++t)
          ASSERT_EQ(c.terms[static_cast<cost::Term>(t)], terms[static_cast<cost::Term>(t)]) << "buffer " << n;
        ++checked;
        loops += !one_shot;
      }
    }
  }
  EXPECT_GT(checked, 5000u);
  EXPECT_GT(loops, 1000u);
}

}  // namespace mlaplan::policies
