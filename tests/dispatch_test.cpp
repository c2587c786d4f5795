// One dispatch truth: which path each engine runs a batch on, on the cost file's GPU (engine_path's
// rules at their edges), the terms of the path that takes the whole context at once counted by hand,
// the cost file's compute_capability (given, derived from the GPU's name, refused), and sweeps and
// recommendations that price each batch on its dispatched path.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/workloads/batch_formation.hpp"
#include "mlaplan/policies/dispatch.hpp"
#include "mlaplan/policies/policy_cost.hpp"
#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/sweeps/sweep.hpp"
#include "mlaplan/sweeps/sweep_format.hpp"
#include "mlaplan/workloads/workload.hpp"
#include "cost_examples.hpp"
#include "test_batches.hpp"

namespace mlaplan::policies {

namespace {

using cost::Features;
using cost::Geometry;
using cost::Term;
using test::make_batch;

const std::string& kExample = test::kExampleCost;
std::string example_text() { return test::example_cost_text(); }

// The example file with `from` replaced by `to` (once).
std::string edited(const std::string& from, const std::string& to) {
  std::string text = example_text();
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string refusal(const std::string& text) {
  try {
    cost::parse_cost_model(text, "c.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

Policy named(const char* name) { return parse_policies(name, Policy{}).front(); }

const Policy kTrtllm = named("packed/trtllm"), kSglang = named("even-split/sglang");

// A batch of one sequence per (cached, new) pair, page 1.
Batch batch_of(std::vector<uint32_t> cache, std::vector<uint32_t> fresh, uint32_t buffer) {
  std::vector<uint32_t> offsets{0};
  for (uint32_t n : fresh) offsets.push_back(offsets.back() + n);
  return make_batch(1, buffer, 16, std::move(cache), std::move(offsets));
}

TEST(EnginePath, Names) {
  EXPECT_STREQ(path_name(EnginePath::chunked), "chunked");
  EXPECT_STREQ(path_name(EnginePath::one_shot), "one-shot");
  EXPECT_STREQ(path_name(EnginePath::absorbed), "absorbed");
  EXPECT_EQ(kSglangChunkedPrefixCacheThreshold, 8192u);
}

// TensorRT-LLM: the whole context below SM100, its loop from SM100 on; no GPU named: the loop.
TEST(EnginePath, TensorRtLlmFollowsTheComputeCapability) {
  const Batch b = batch_of({100000, 300}, {2000, 10}, 4096);
  EXPECT_EQ(engine_path(b, kTrtllm, 90), EnginePath::one_shot);
  EXPECT_EQ(engine_path(b, kTrtllm, 89), EnginePath::one_shot);  // get_sm_version() >= 100 is the loop's test
  EXPECT_EQ(engine_path(b, kTrtllm, 99), EnginePath::one_shot);
  EXPECT_EQ(engine_path(b, kTrtllm, 100), EnginePath::chunked);
  EXPECT_EQ(engine_path(b, kTrtllm, 103), EnginePath::chunked);
  EXPECT_EQ(engine_path(b, kTrtllm, 0), EnginePath::chunked);
  EXPECT_TRUE(whole_without_buffer(kTrtllm, 90));
  EXPECT_FALSE(whole_without_buffer(kTrtllm, 100));
  EXPECT_FALSE(whole_without_buffer(kTrtllm, 0));
  EXPECT_FALSE(whole_without_buffer(kSglang, 90));  // SGLang's one-shot fits in its buffer
}

// SGLang compares the sum of the prefix lengths with the threshold: 8191 in all is absorbed, 8192 is MHA.
TEST(EnginePath, SglangThresholdIsOnThePrefixSum) {
  const uint32_t big = 1 << 20;  // a buffer every total fits
  EXPECT_EQ(engine_path(batch_of({8191}, {100}, big), kSglang, 90), EnginePath::absorbed);
  EXPECT_EQ(engine_path(batch_of({8192}, {100}, big), kSglang, 90), EnginePath::one_shot);
  EXPECT_EQ(engine_path(batch_of({4096, 4095}, {1, 1}, big), kSglang, 90), EnginePath::absorbed);  // 8191 in all
  EXPECT_EQ(engine_path(batch_of({4096, 4096}, {1, 1}, big), kSglang, 90), EnginePath::one_shot);  // 8192 in all
  EXPECT_EQ(engine_path(batch_of({1}, {0}, big), kSglang, 90), EnginePath::absorbed);
  // The same on every GPU, and never without one.
  EXPECT_EQ(engine_path(batch_of({8191}, {100}, big), kSglang, 100), EnginePath::absorbed);
  EXPECT_EQ(engine_path(batch_of({8191}, {100}, big), kSglang, 0), EnginePath::chunked);
}

// One-shot where cached + new tokens, summed over the batch, fit the buffer; one more is the loop.
TEST(EnginePath, SglangOneShotWhileTheBatchFitsTheBuffer) {
  // 10,000 + 20 cached and 300 + 4 new: 10,324 tokens.
  EXPECT_EQ(engine_path(batch_of({10000, 20}, {300, 4}, 10324), kSglang, 90), EnginePath::one_shot);
  EXPECT_EQ(engine_path(batch_of({10000, 20}, {300, 4}, 10323), kSglang, 90), EnginePath::chunked);
  EXPECT_EQ(engine_path(kSglang, 10020, 10324, 10324, 90), EnginePath::one_shot);
  EXPECT_EQ(engine_path(kSglang, 10020, 10325, 10324, 90), EnginePath::chunked);
  // The lower bound's buffer holds every batch: one-shot or absorbed, never the loop.
  EXPECT_EQ(unbounded_path(batch_of({10000, 20}, {300, 4}, 64), kSglang, 90), EnginePath::one_shot);
  EXPECT_EQ(unbounded_path(batch_of({100}, {300}, 64), kSglang, 90), EnginePath::absorbed);
  EXPECT_EQ(unbounded_path(batch_of({100}, {300}, 64), kTrtllm, 100), EnginePath::chunked);
}

// vLLM and MAX run their loops on every GPU.
TEST(EnginePath, VllmAndMaxAlwaysLoop) {
  const Batch b = batch_of({100}, {10}, 1 << 20);
  Policy aligned = named("packed");
  aligned.split_align = 1;
  for (const Policy& p : {named("max"), named("packed"), aligned, named("even-split/vllm")})
    for (uint32_t sm : {0u, 80u, 90u, 100u}) {
      EXPECT_EQ(engine_path(b, p, sm), EnginePath::chunked) << p.name() << " sm " << sm;
      EXPECT_FALSE(dispatches(p, sm)) << p.name();
    }
}

// Without context every engine runs the new tokens' step, whatever path its rules name: the whole
// context's terms are then the new tokens' step's.
TEST(EnginePath, WithoutContextEveryPathIsTheNewTokensStep) {
  const Geometry g{16, 132, 1, 128};
  const Batch b = batch_of({0, 0, 0}, {300, 0, 5000}, 4096);  // 5,300 tokens: over the buffer
  EXPECT_EQ(engine_path(b, kTrtllm, 90), EnginePath::one_shot);
  EXPECT_EQ(engine_path(b, kSglang, 90), EnginePath::chunked);  // MHA with no prefix, over the capacity
  EXPECT_EQ(engine_path(batch_of({0}, {300}, 4096), kSglang, 90), EnginePath::one_shot);
  Features step = new_tokens_features(b, g);
  step[Term::batch] = 1;
  EXPECT_EQ(whole_context_features(b, g).values, step.values);
  for (const char* name : {"packed", "even-split/vllm", "even-split/sglang", "packed/trtllm"})
    for (uint32_t sm : {0u, 90u, 100u})
      EXPECT_EQ(dispatched_features(b, named(name), g, sm).values, step.values) << name << " sm " << sm;
}

// The whole context by hand: cache {1000, 0, 300}, new {100, 50, 0}, tiles of 128, 16 heads, 132 slots.
TEST(WholeContext, TermsByHand) {
  const Geometry g{16, 132, 1, 128};
  const Features f = whole_context_features(batch_of({1000, 0, 300}, {100, 50, 0}, 64), g);
  EXPECT_EQ(f[Term::batch], 1);
  EXPECT_EQ(f[Term::fixed_step], 1);
  EXPECT_EQ(f[Term::iteration], 0);
  EXPECT_EQ(f[Term::row], 1100 + 50 + 300);  // every cached and new row, unpadded
  EXPECT_EQ(f[Term::query], 150);
  EXPECT_EQ(f[Term::merged_query], 0);  // its output is the layer's
  // One tile each: 100 queries over 1,100 keys (the last tile walks them all), 50 over 50; the third
  // sequence has no queries and computes nothing.
  const double work = 128.0 * 1100 + 128.0 * 50;
  EXPECT_DOUBLE_EQ(f[Term::mpair], work * 1e-6);
  EXPECT_EQ(f[Term::block], 2 * 16);
  // The grid: 3 sequences x 1 tile x 16 heads, 2 of them computing; the sequence without new tokens
  // still sits in FlashAttention-2's grid.
  EXPECT_EQ(f[Term::empty_block], 16);
  // 32 blocks on 132 slots: one wave, as long as the longest block.
  EXPECT_DOUBLE_EQ(f[Term::idle_mpair], (128.0 * 1100 * 132 / 16 - work) * 1e-6);
}

// Causal tiles stop at their diagonal, bottom-right: 300 new tokens on 200 cached see 200 + 128,
// 200 + 256 and (the last tile whole) all 500 keys.
TEST(WholeContext, CausalTilesOverTheCachedKeys) {
  const Geometry g{16, 132, 1, 128};
  const Features f = whole_context_features(batch_of({200}, {300}, 64), g);
  EXPECT_DOUBLE_EQ(f[Term::mpair], 128.0 * (328 + 456 + 500) * 1e-6);
  EXPECT_EQ(f[Term::block], 3 * 16);
  EXPECT_EQ(f[Term::empty_block], 0);
  EXPECT_EQ(f[Term::row], 500);
}

TEST(WholeContext, DispatchedTermsFollowThePath) {
  const Geometry g{16, 132, 1, 128};
  const Batch b = batch_of({20000, 3000}, {500, 40}, 4096);  // 23,540 tokens; prefix 23,000
  const Features whole = whole_context_features(b, g);
  EnginePath path{};
  EXPECT_EQ(dispatched_features(b, kTrtllm, g, 90, &path).values, whole.values);
  EXPECT_EQ(path, EnginePath::one_shot);
  EXPECT_EQ(dispatched_features(b, kTrtllm, g, 100, &path).values, policy_features(b, kTrtllm, g).values);
  EXPECT_EQ(path, EnginePath::chunked);
  EXPECT_GT(policy_features(b, kTrtllm, g)[Term::iteration], 1);
  EXPECT_EQ(dispatched_features(b, kSglang, g, 90, &path).values, policy_features(b, kSglang, g).values);
  EXPECT_EQ(path, EnginePath::chunked);  // 23,540 > 4,096
  Batch fits = b;
  fits.buffer_token_size = 23540;
  EXPECT_EQ(dispatched_features(fits, kSglang, g, 90, &path).values, whole.values);
  EXPECT_EQ(path, EnginePath::one_shot);
  // The lower bound: the whole context where a buffer holding the batch gives that path.
  EXPECT_EQ(dispatched_unbounded_features(b, kSglang, g, 90).values, whole.values);
  EXPECT_EQ(dispatched_unbounded_features(b, kTrtllm, g, 90).values, whole.values);
  EXPECT_EQ(dispatched_unbounded_features(b, kTrtllm, g, 100).values, unbounded_features(b, kTrtllm, g).values);
  EXPECT_EQ(dispatched_unbounded_features(b, kSglang, g, 0).values, unbounded_features(b, kSglang, g).values);
}

TEST(EnginePath, ReasonsNameTheRule) {
  EXPECT_EQ(path_reason(batch_of({100}, {10}, 64), kTrtllm, 90),
            "TensorRT-LLM runs the whole context at once on SM90 (forward_context_with_cached_kv; its chunk loop needs SM100)");
  EXPECT_NE(path_reason(batch_of({100}, {10}, 64), kSglang, 90).find("absorbed MLA"), std::string::npos);
  EXPECT_NE(path_reason(batch_of({100}, {10}, 64), kSglang, 90).find("SGLANG_CHUNKED_PREFIX_CACHE_THRESHOLD (8192)"),
            std::string::npos);
  EXPECT_NE(path_reason(batch_of({9000}, {10}, 64), kSglang, 90).find("exceed the buffer of 64 rows"), std::string::npos);
  EXPECT_NE(path_reason(batch_of({9000}, {10}, 9010), kSglang, 90).find("one-shot MHA"), std::string::npos);
  EXPECT_EQ(path_reason(batch_of({100}, {10}, 64), named("packed"), 90), "vLLM runs its chunk loop on every GPU");
}

// The file's compute_capability, "9.0" or 9.0; without it, the GPU's name says.
TEST(CostFileCapability, GivenOrDerivedFromTheGpu) {
  EXPECT_EQ(cost::read_cost_model(kExample).sm, 90u);  // "NVIDIA H200", no compute_capability
  const std::string gpu = "\"gpu\": \"NVIDIA H200\",";
  EXPECT_EQ(cost::parse_cost_model(edited(gpu, gpu + " \"compute_capability\": \"10.0\","), "c.json").sm, 100u);
  EXPECT_EQ(cost::parse_cost_model(edited(gpu, gpu + " \"compute_capability\": 9.0,"), "c.json").sm, 90u);
  EXPECT_EQ(cost::parse_cost_model(edited(gpu, gpu + " \"compute_capability\": \"8.9\","), "c.json").sm, 89u);
  EXPECT_EQ(cost::parse_cost_model(edited(gpu, gpu + " \"compute_capability\": 10,"), "c.json").sm, 100u);
  EXPECT_EQ(cost::parse_cost_model(edited(gpu, gpu + " \"compute_capability\": null,"), "c.json").sm, 90u);
  EXPECT_EQ(cost::parse_cost_model(edited("NVIDIA H200", "NVIDIA B200"), "c.json").sm, 100u);
  EXPECT_EQ(cost::parse_cost_model(edited("NVIDIA H200", "Synthetic GPU\", \"compute_capability\": \"9.0"), "c.json").sm, 90u);
  EXPECT_EQ(cost::compute_capability_text(90), "9.0");
  EXPECT_EQ(cost::compute_capability_text(103), "10.3");
}

TEST(CostFileCapability, KnownGpusByWholeWord) {
  EXPECT_EQ(cost::known_gpu_sm("NVIDIA H100 80GB HBM3"), 90u);
  EXPECT_EQ(cost::known_gpu_sm("NVIDIA GH200 480GB"), 90u);
  EXPECT_EQ(cost::known_gpu_sm("NVIDIA H20"), 90u);
  EXPECT_EQ(cost::known_gpu_sm("nvidia h800"), 90u);
  EXPECT_EQ(cost::known_gpu_sm("NVIDIA B200"), 100u);
  EXPECT_EQ(cost::known_gpu_sm("NVIDIA GB200"), 100u);
  EXPECT_EQ(cost::known_gpu_sm("NVIDIA B300 SXM6 AC"), 103u);
  EXPECT_EQ(cost::known_gpu_sm("NVIDIA A100-SXM4-80GB"), 80u);  // A100, not A10
  EXPECT_EQ(cost::known_gpu_sm("NVIDIA A10"), 86u);
  EXPECT_EQ(cost::known_gpu_sm("NVIDIA L40S"), 89u);
  EXPECT_EQ(cost::known_gpu_sm("NVIDIA GeForce RTX 4090"), 0u);
  EXPECT_EQ(cost::known_gpu_sm("Synthetic GPU"), 0u);
  EXPECT_EQ(cost::known_gpu_sm("H2000"), 0u);  // a word, not a prefix
}

TEST(CostFileCapability, RefusedNamingTheField) {
  EXPECT_EQ(refusal(edited("NVIDIA H200", "Synthetic GPU")),
            "c.json: compute_capability: missing, and \"Synthetic GPU\" is not a GPU mlaplan knows; add "
            "\"compute_capability\": \"9.0\" (the GPU's)");
  const std::string gpu = "\"gpu\": \"NVIDIA H200\",";
  for (const char* bad : {"\"9\"", "\"nine\"", "90", "-1", "true", "\"9.0.1\"", "\"\"", "9.05", "\"31.0\""}) {
    const std::string why = refusal(edited(gpu, gpu + " \"compute_capability\": " + bad + ","));
    EXPECT_EQ(why.rfind("c.json: compute_capability: ", 0), 0u) << bad << ": " << why;
    EXPECT_NE(why.find("is not a compute capability"), std::string::npos) << bad << ": " << why;
  }
}

// Coding-agent batches and a grid over them with the example cost model (an H200), DeepSeek-V3 TP 8.
std::vector<Batch> coding_agent_batches(size_t n = 200) {
  auto source = workloads::preset_source(workloads::find_workload_preset("coding-agent"), 5);
  return workloads::form_batches(*source, workloads::BatchFormation{}, workloads::BatchSettings{}, n, 5);
}

sweeps::SweepGrid grid_on(const std::string& cost_text, std::vector<uint32_t> buffers, const char* policies) {
  sweeps::SweepGrid grid;
  grid.buffer_tokens = std::move(buffers);
  grid.max_chunks = {1024};
  grid.policies = parse_policies(policies, Policy{});
  grid.models = {models::find_model_preset("deepseek-v3")};
  grid.tps = {8};
  grid.costs = {cost::parse_cost_model(cost_text, "c.json")};
  return grid;
}

const std::string kB200 = "NVIDIA B200";

// TensorRT-LLM on an H200 runs every batch whole: no iterations, nothing over the lower bound, the same
// time at every buffer, and the memory of the largest batch's whole context. On a B200 it loops.
TEST(DispatchSweep, TensorRtLlmOnSm90TakesEveryBatchWhole) {
  const std::vector<Batch> batches = coding_agent_batches();
  uint64_t largest = 0;
  for (const Batch& b : batches) {
    uint64_t total = b.input_row_offsets.back() - b.input_row_offsets.front();
    for (uint32_t len : b.cache_lengths) total += len;
    largest = std::max(largest, total);
  }
  const sweeps::SweepResult h200 = sweeps::run_sweep(batches, grid_on(example_text(), {4096, 65536}, "packed/trtllm"));
  ASSERT_EQ(h200.rows.size(), 2u);
  for (const sweeps::SweepRow& r : h200.rows) {
    ASSERT_TRUE(r.time);
    const sweeps::TimeStats& t = *r.time;
    EXPECT_EQ(t.path(), "one-shot") << r.setting();
    EXPECT_EQ(t.on(EnginePath::one_shot), batches.size());
    EXPECT_EQ(t.mean_iterations, 0);
    EXPECT_EQ(t.iteration_share, 0);
    EXPECT_NEAR(t.over_lower_bound, 0, 1e-12);
    EXPECT_TRUE(t.buffer_free);
    EXPECT_EQ(t.memory_rows, largest);
    EXPECT_EQ(t.most_rows, largest);
    EXPECT_GT(r.mean_iterations, 0);  // the policy's own loop, shown beside the time
  }
  EXPECT_EQ(h200.rows[0].time->layer_us, h200.rows[1].time->layer_us);

  const sweeps::SweepResult b200 = sweeps::run_sweep(batches, grid_on(edited("NVIDIA H200", kB200), {4096, 65536}, "packed/trtllm"));
  for (const sweeps::SweepRow& r : b200.rows) {
    const sweeps::TimeStats& t = *r.time;
    EXPECT_EQ(t.path(), "chunked") << r.setting();
    EXPECT_DOUBLE_EQ(t.mean_iterations, r.mean_iterations);
    EXPECT_GT(t.over_lower_bound, 0);
    EXPECT_FALSE(t.buffer_free);
    EXPECT_EQ(t.memory_rows, r.buffer_tokens);
  }
}

// Every batch's time in a sweep is its dispatched path's, under every policy but max, on an H200 and
// a B200 (a second cost model, at TP 1); the lower bound of a batch is the least of the dispatched
// one (a buffer holding it whole) and its prices at every buffer of the grid under the same policy
// and cost model.
TEST(DispatchSweep, EachBatchIsPricedOnItsPath) {
  std::vector<Batch> batches = coding_agent_batches(120);
  // Short prefixes (absorbed on SGLang), no context, and a prefix of exactly the threshold.
  batches.push_back(batch_of({100, 0, 3000}, {50, 20, 7}, 64));
  batches.push_back(batch_of({0, 0}, {500, 3000}, 64));
  batches.push_back(batch_of({8000, 192}, {1000, 1}, 64));
  sweeps::SweepGrid grid = grid_on(example_text(), {2048, 16384, 131072}, "packed,packed/trtllm,even-split/vllm,even-split/sglang");
  std::string tp1 = edited("\"tp\": 8", "\"tp\": 1");
  tp1.replace(tp1.find("\"heads\": 16"), 11, "\"heads\": 128");
  tp1.replace(tp1.find("NVIDIA H200"), 11, kB200);
  grid.costs.push_back(cost::parse_cost_model(tp1, "b200.json"));
  grid.tps = {8, 1};
  const sweeps::SweepResult s = sweeps::run_sweep(batches, grid);
  size_t absorbed = 0, one_shot = 0, chunked = 0;
  std::vector<std::vector<double>> priced(s.rows.size());  // per row and batch; NaN where refused
  std::map<std::pair<std::string, size_t>, std::vector<double>> floors;  // per (policy, cost model)
  for (size_t n = 0; n < s.rows.size(); ++n) {
    const sweeps::SweepRow& r = s.rows[n];
    ASSERT_TRUE(r.time);
    const cost::CostModel& c = s.costs[r.time->cost];
    std::vector<double>& floor = floors[{r.policy.name(), r.time->cost}];
    if (floor.empty())
      for (const Batch& b : batches) floor.push_back(c.predict_us(dispatched_unbounded_features(b, r.policy, c.geometry, c.sm)));
    uint64_t refused = 0;
    for (size_t i = 0; i < batches.size(); ++i) {
      Batch b = batches[i];
      b.buffer_token_size = r.buffer_tokens;
      const EnginePath path = engine_path(b, r.policy, c.sm);
      const float got = r.time->layer_us[i];
      if (path == EnginePath::chunked && policy_outcome(b, r.policy).refused) {
        EXPECT_TRUE(std::isinf(got)) << r.setting() << " batch " << i;
        ++refused;
        priced[n].push_back(std::nan(""));
        continue;
      }
      const double want = c.predict_us(dispatched_features(b, r.policy, c.geometry, c.sm));
      EXPECT_NEAR(got, want, 1e-5 * want) << r.setting() << " batch " << i << " " << path_name(path);
      priced[n].push_back(want);
      floor[i] = std::min(floor[i], want);
      absorbed += path == EnginePath::absorbed;
      one_shot += path == EnginePath::one_shot;
      chunked += path == EnginePath::chunked;
    }
    EXPECT_EQ(r.time->refused, refused) << r.setting();
    EXPECT_EQ(r.time->on(EnginePath::chunked) + r.time->on(EnginePath::one_shot) + r.time->on(EnginePath::absorbed) + refused,
              batches.size());
  }
  size_t below_one_chunk = 0;  // rows some batch of which is cheaper than with a buffer holding it whole
  for (size_t n = 0; n < s.rows.size(); ++n) {
    const sweeps::SweepRow& r = s.rows[n];
    const std::vector<double>& floor = floors.at({r.policy.name(), r.time->cost});
    double total = 0, lower = 0, one_chunk = 0;
    for (size_t i = 0; i < batches.size(); ++i) {
      if (std::isnan(priced[n][i])) continue;
      const cost::CostModel& c = s.costs[r.time->cost];
      total += priced[n][i];
      lower += floor[i];
      one_chunk += c.predict_us(dispatched_unbounded_features(batches[i], r.policy, c.geometry, c.sm));
    }
    if (lower > 0) EXPECT_NEAR(r.time->over_lower_bound, total / lower - 1, 1e-6) << r.setting();
    EXPECT_GE(r.time->over_lower_bound, 0) << r.setting();
    below_one_chunk += total < one_chunk;
  }
  EXPECT_GT(below_one_chunk, 0u);  // the example's even split beats one launch: the bound is not one chunk's time
  EXPECT_GT(absorbed, 0u);  // every path is exercised
  EXPECT_GT(one_shot, 0u);
  EXPECT_GT(chunked, 0u);
}

// A batch whose loop TensorRT-LLM's policy refuses (more than 2^24 chunks) is priced where the engine
// takes it whole, and refused where it loops.
TEST(DispatchSweep, RefusedByTheLoopButNotWhereItDoesNotRun) {
  const std::vector<Batch> batches{batch_of({(1u << 24) + 100}, {10}, 1), batch_of({300}, {10}, 1)};
  const sweeps::SweepResult h200 = sweeps::run_sweep(batches, grid_on(example_text(), {1}, "packed/trtllm"));
  ASSERT_EQ(h200.rows.size(), 1u);
  EXPECT_EQ(h200.rows[0].refused, 1u);  // the policy's loop
  EXPECT_EQ(h200.rows[0].time->refused, 0u);
  EXPECT_TRUE(std::isfinite(h200.rows[0].time->mean_us));
  const sweeps::SweepResult b200 = sweeps::run_sweep(batches, grid_on(edited("NVIDIA H200", kB200), {1}, "packed/trtllm"));
  EXPECT_EQ(b200.rows[0].time->refused, 1u);
  EXPECT_TRUE(std::isinf(b200.rows[0].time->mean_us));
}

// The outputs say the path per row, and the recommendation says TensorRT-LLM on SM90 has no buffer to
// size instead of choosing one; on a B200 it chooses one.
TEST(DispatchSweep, RecommendationSaysThereIsNoBufferToSize) {
  const std::vector<Batch> batches = coding_agent_batches(100);
  const sweeps::SweepResult s = sweeps::run_sweep(batches, grid_on(example_text(), {4096, 16384, 65536}, "packed/trtllm,packed"));
  sweeps::RecommendOptions o;
  o.objective = sweeps::Objective::time;
  const std::vector<sweeps::Recommendation> recs = sweeps::recommend(s, o);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_FALSE(recs[0].row);
  ASSERT_TRUE(recs[0].whole_row);
  EXPECT_NE(recs[0].whole_context.find("TensorRT-LLM runs the whole context at once on SM90"), std::string::npos);
  EXPECT_TRUE(recs[1].row);  // vLLM loops on every GPU
  EXPECT_TRUE(recs[1].whole_context.empty());
  sweeps::SweepReport report;
  report.sweep = &s;
  report.recommend_options = o;
  report.recommendations = recs;
  const std::string table = sweeps::format_sweep_table(report);
  EXPECT_NE(table.find("packed/trtllm deepseek-v3 TP8: no buffer to size: TensorRT-LLM runs the whole context at once"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("holding the largest batch's whole context"), std::string::npos) << table;
  const std::string json = sweeps::format_sweep_json(report);
  EXPECT_NE(json.find("\"path\": \"one-shot\""), std::string::npos);
  EXPECT_NE(json.find("\"whole_context\": \"TensorRT-LLM"), std::string::npos);
  const std::string csv = sweeps::format_sweep_csv(report);
  EXPECT_NE(csv.find(",path,paths_chunked,paths_one_shot,paths_absorbed,paths_refused,dispatched_mean_iterations,most_rows,"
                     "memory_rows,memory_bytes,"),
            std::string::npos)
      << csv.substr(0, csv.find('\n'));

  // A memory budget below the whole context: no buffer changes it, and the text says so.
  o.memory_budget = 1024;
  report.recommend_options = o;
  report.recommendations = sweeps::recommend(s, o);
  EXPECT_NE(sweeps::format_sweep_table(report).find("which no buffer changes"), std::string::npos);

  const sweeps::SweepResult b200 = sweeps::run_sweep(batches, grid_on(edited("NVIDIA H200", kB200), {4096, 16384, 65536}, "packed/trtllm"));
  o.memory_budget.reset();
  const std::vector<sweeps::Recommendation> looped = sweeps::recommend(b200, o);
  ASSERT_EQ(looped.size(), 1u);
  EXPECT_TRUE(looped[0].row);
  EXPECT_FALSE(looped[0].whole_row);
}

}  // namespace
}  // namespace mlaplan::policies
