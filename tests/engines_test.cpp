// Engines by name (--policy vllm, sglang, trtllm, max) resolved per GPU, each engine's default buffer
// against hand-computed values, the memory a buffer reserves as KV-cache tokens, the presets' contexts,
// and the recommendation's honest words: the grid's edges, refusals counted, numbers not "never".
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/models/model.hpp"
#include "mlaplan/policies/dispatch.hpp"
#include "mlaplan/policies/engines.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/sweeps/sweep.hpp"
#include "mlaplan/sweeps/sweep_format.hpp"
#include "cost_examples.hpp"
#include "test_batches.hpp"

namespace mlaplan {
namespace {

using policies::Engine;
using policies::EnginePath;
using policies::Policy;
using policies::PolicyKind;

// A batch of sequences with these cached and new tokens.
Batch batch(std::vector<uint32_t> cache, const std::vector<uint32_t>& news, uint32_t page, uint32_t buffer, uint32_t m) {
  std::vector<uint32_t> offsets{0};
  for (uint32_t n : news) offsets.push_back(offsets.back() + n);
  return test::make_batch(page, buffer, m, std::move(cache), offsets);
}

std::vector<std::string> names(const std::vector<Policy>& ps) {
  std::vector<std::string> out;
  for (const Policy& p : ps) out.push_back(p.name());
  return out;
}

TEST(EngineNames, EachEngineIsItsAlgorithm) {
  const std::vector<Policy> ps = policies::parse_policies("vllm,SGLang,trtllm,max,guided", Policy{});
  ASSERT_EQ(ps.size(), 5u);
  EXPECT_EQ(ps[0].kind, PolicyKind::packed);
  EXPECT_EQ(ps[0].packed, policies::PackedVariant::vllm);
  EXPECT_EQ(ps[0].split_align, 0u);  // vLLM splits at pages
  EXPECT_EQ(ps[1].kind, PolicyKind::even_split);
  EXPECT_EQ(ps[1].even_split, policies::EvenSplitVariant::sglang);
  EXPECT_EQ(ps[2].packed, policies::PackedVariant::trtllm);
  EXPECT_EQ(ps[3].kind, PolicyKind::max);
  EXPECT_EQ(ps[4].kind, PolicyKind::guided);
  EXPECT_EQ(names(ps), (std::vector<std::string>{"vllm (packed)", "sglang (even split)", "trtllm (packed/trtllm)", "max",
                                                  "guided"}));
  EXPECT_EQ(policies::engine_of(ps[0]), Engine::vllm);
  EXPECT_EQ(policies::engine_of(ps[1]), Engine::sglang);
  EXPECT_EQ(policies::engine_of(ps[2]), Engine::trtllm);
  EXPECT_EQ(policies::engine_of(ps[3]), Engine::max);
  EXPECT_EQ(policies::engine_of(ps[4]), Engine::vllm);  // guided runs vLLM's packed loop
}

TEST(EngineNames, GroupsHoldEveryEngine) {
  EXPECT_EQ(names(policies::parse_policies("engines", Policy{})),
            (std::vector<std::string>{"vllm (packed)", "sglang (even split)", "trtllm (packed/trtllm)", "max"}));
  const std::vector<std::string> all = names(policies::parse_policies("all", Policy{}));
  for (const char* engine : {"max", "packed", "sglang (even split)", "trtllm (packed/trtllm)"})
    EXPECT_NE(std::find(all.begin(), all.end(), engine), all.end()) << engine;
  // The old algorithm names still parse as before.
  EXPECT_EQ(names(policies::parse_policies("packed/vllm,packed/trtllm,even-split/sglang", Policy{})),
            (std::vector<std::string>{"packed", "packed/trtllm", "even-split/sglang"}));
}

TEST(EngineNames, TheVariantOptionsDoNotChangeAnEngine) {
  Policy defaults;
  defaults.packed = policies::PackedVariant::trtllm;
  defaults.split_align = 7;
  defaults.even_split = policies::EvenSplitVariant::vllm;
  const std::vector<Policy> ps = policies::parse_policies("vllm,sglang", defaults);
  EXPECT_EQ(ps[0].packed, policies::PackedVariant::vllm);
  EXPECT_EQ(ps[0].split_align, 0u);
  EXPECT_EQ(ps[1].even_split, policies::EvenSplitVariant::sglang);
  EXPECT_THROW(policies::parse_policies("vllm/packed", Policy{}), InputError);
  EXPECT_THROW(policies::parse_policies("vllm:c.json", Policy{}), InputError);
}

TEST(EngineNames, ResolvedPerGpu) {
  std::vector<Policy> ps = policies::parse_policies("trtllm,sglang,vllm", Policy{});
  policies::name_engines_for(ps, 90);  // H100, H200
  EXPECT_EQ(ps[0].name(), "trtllm (one shot)");
  policies::name_engines_for(ps, 100);  // B200
  EXPECT_EQ(ps[0].name(), "trtllm (packed/trtllm)");
  // What runs: TensorRT-LLM takes the whole context on SM90 and loops on SM100; SGLang runs one shot
  // where the batch fits (sum of cached + new <= capacity) and absorbed MLA below 8192 prefix tokens.
  EXPECT_EQ(policies::engine_path(ps[0], 100000, 100100, 4096, 90), EnginePath::one_shot);
  EXPECT_EQ(policies::engine_path(ps[0], 100000, 100100, 4096, 100), EnginePath::chunked);
  EXPECT_EQ(policies::engine_path(ps[1], 60000, 60100, 65536, 90), EnginePath::one_shot);
  EXPECT_EQ(policies::engine_path(ps[1], 60000, 70000, 65536, 90), EnginePath::chunked);
  EXPECT_EQ(policies::engine_path(ps[1], 8191, 9000, 4096, 90), EnginePath::absorbed);
  EXPECT_EQ(policies::engine_path(ps[2], 100000, 100100, 1 << 30, 90), EnginePath::chunked);  // vLLM always loops
}

TEST(EngineDefaults, VllmFormulaByHand) {
  // min(max(8 x 163840, 4 x 256 x 128), 65536) = min(1310720, 65536)
  EXPECT_EQ(policies::vllm_default_workspace(163840, 256, 128), 65536u);
  // min(max(32768, 65536), 65536)
  EXPECT_EQ(policies::vllm_default_workspace(4096, 256, 64), 65536u);
  // min(max(16384, 4096), 65536)
  EXPECT_EQ(policies::vllm_default_workspace(2048, 16, 64), 16384u);
  // 8 x 1000 = 8000, rounded up to a page of 48: 8016
  EXPECT_EQ(policies::vllm_default_workspace(1000, 1, 48), 8016u);
  EXPECT_EQ(policies::vllm_default_workspace(UINT64_MAX, UINT32_MAX, 64), 65536u);  // saturates, no wrap
}

TEST(EngineDefaults, EachEngineAndItsKnob) {
  policies::EngineSettings s;
  s.max_model_len = 163840;
  s.max_num_tokens = 8192;
  const policies::EngineDefault vllm = policies::engine_default(Engine::vllm, s, 90);
  EXPECT_EQ(vllm.buffer_tokens, 65536u);
  EXPECT_NE(vllm.knob.find("none upstream"), std::string::npos);
  const policies::EngineDefault sglang = policies::engine_default(Engine::sglang, s, 90);
  EXPECT_EQ(sglang.buffer_tokens, 131072u);
  EXPECT_NE(sglang.knob.find("SGLANG_MAX_KV_CHUNK_CAPACITY"), std::string::npos);
  const policies::EngineDefault h100 = policies::engine_default(Engine::trtllm, s, 90);
  EXPECT_TRUE(h100.whole_context);
  EXPECT_EQ(h100.buffer_tokens, 32768u);  // 8192 x 4, unused on SM90
  const policies::EngineDefault b200 = policies::engine_default(Engine::trtllm, s, 100);
  EXPECT_FALSE(b200.whole_context);
  EXPECT_NE(b200.knob.find("max_num_tokens and chunked_prefill_buffer_batch_size"), std::string::npos);
  const policies::EngineDefault max = policies::engine_default(Engine::max, s, 90);
  EXPECT_EQ(max.buffer_tokens, 16384u);
  EXPECT_NE(max.knob.find("buffer_size"), std::string::npos);
}

TEST(KvCacheTokens, DeepSeekV3AtTp8) {
  const models::BufferMemory m = models::buffer_memory(models::find_model_preset("deepseek-v3"), 8, models::Dtype::bf16);
  EXPECT_EQ(m.kv_cache_bytes_per_token, 576u * 2 * 61);  // 70,272 B: the latent row of every layer
  // 65,536 rows: latent 75,497,472 + K/V 16 x 256 x 2 x 65,536 + K concat 16 x 192 x 2 x 65,536
  EXPECT_EQ(m.reserved_bytes(65536), 75497472u + 536870912u + 402653184u);
  EXPECT_EQ(m.kv_cache_tokens(m.reserved_bytes(65536)), 14444u);  // 1,015,021,568 / 70,272 = 14,444.3
  EXPECT_EQ(m.kv_cache_tokens(70271), 0u);
}

TEST(ModelContext, PresetsAndConfigs) {
  EXPECT_EQ(models::find_model_preset("deepseek-v3").max_context, 163840u);
  EXPECT_EQ(models::find_model_preset("kimi-k2").max_context, 131072u);
  EXPECT_EQ(models::find_model_preset("glm-5").max_context, 202752u);
  for (const models::ModelDims& m : models::model_presets()) EXPECT_GT(m.max_context, 0u) << m.name;
  const std::string base = R"({"kv_lora_rank":512,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,)"
                           R"("num_attention_heads":16,"num_hidden_layers":27)";
  EXPECT_EQ(models::parse_model_config(base + "}", "c.json").max_context, 0u);
  EXPECT_EQ(models::parse_model_config(base + R"(,"max_position_embeddings":163840})", "c.json").max_context, 163840u);
  for (const char* bad : {"0", "-1", "\"163840\"", "1.5", "8589934592"})
    try {
      models::parse_model_config(base + ",\"max_position_embeddings\":" + bad + "}", "c.json");
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("c.json: max_position_embeddings: expected"), std::string::npos) << e.what();
    }
}

TEST(HonestWords, CountsNotWords) {
  EXPECT_EQ(sweeps::refused_text(2, 10000), "2 of 10,000 batches (0.02%)");
  EXPECT_EQ(sweeps::refused_text(1, 1000000), "1 of 1,000,000 batches (0.0001%)");
  EXPECT_EQ(sweeps::refused_text(0, 1), "0 of 1 batch (0.00%)");
  EXPECT_EQ(sweeps::grid_beyond(262144, true), "--buffer-tokens 524288:2097152:x2");
  EXPECT_EQ(sweeps::grid_beyond(4096, false), "--buffer-tokens 512:2048:x2");
  EXPECT_EQ(sweeps::grid_beyond(0x7fffffffu, true), "");
  EXPECT_EQ(sweeps::format_ms(std::numeric_limits<double>::infinity()).find("never"), std::string::npos);
}

// Batches whose contexts make small buffers loop more: the time objective picks the grid's largest.
std::vector<Batch> long_context_batches() {
  std::vector<Batch> out;
  for (uint32_t i = 0; i < 40; ++i) out.push_back(batch({60000 + 1000 * i, 500}, {100, 100}, 128, 4096, 16));
  return out;
}

sweeps::SweepGrid timed_grid(const std::vector<uint32_t>& buffers, const std::string& policies_list) {
  sweeps::SweepGrid g;
  g.buffer_tokens = buffers;
  g.max_chunks = {16};
  g.policies = policies::parse_policies(policies_list, Policy{});
  g.models = {models::find_model_preset("deepseek-v3")};
  g.tps = {8};
  g.costs = {cost::parse_cost_model(test::example_cost_text(), "example.json")};
  return g;
}

TEST(HonestWords, TheGridsLargestIsSaid) {
  const sweeps::SweepResult s = sweeps::run_sweep(long_context_batches(), timed_grid({4096, 16384, 65536}, "vllm"));
  sweeps::RecommendOptions o;
  o.objective = sweeps::Objective::time;
  o.within = 0.001;
  o.engines = policies::EngineSettings{163840, 256, 128, 8192};
  const std::vector<sweeps::Recommendation> recs = sweeps::recommend(s, o);
  ASSERT_EQ(recs.size(), 1u);
  ASSERT_TRUE(recs[0].row);
  EXPECT_EQ(s.rows[*recs[0].row].buffer_tokens, 65536u);
  EXPECT_EQ(recs[0].grid_edge, "largest");
  EXPECT_EQ(recs[0].next_grid, "--buffer-tokens 131072:524288:x2");
  ASSERT_TRUE(recs[0].engine_default);
  EXPECT_EQ(recs[0].engine_default->buffer_tokens, 65536u);
  ASSERT_TRUE(recs[0].default_row);
  EXPECT_EQ(*recs[0].default_row, *recs[0].row);
  sweeps::SweepReport rep;
  rep.sweep = &s;
  rep.recommend_options = o;
  rep.recommendations = recs;
  const std::string text = sweeps::format_sweep_table(rep);
  EXPECT_NE(text.find("the grid's largest buffer: a larger one may be faster still; sweep --buffer-tokens 131072:524288:x2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vLLM's default: 65536 rows"), std::string::npos) << text;
  EXPECT_NE(text.find("its knob: none upstream"), std::string::npos) << text;
  EXPECT_NE(text.find("= 14,444 KV-cache tokens"), std::string::npos) << text;
  const std::string json = sweeps::format_sweep_json(rep);
  EXPECT_NE(json.find("\"next_grid\": \"--buffer-tokens 131072:524288:x2\""), std::string::npos);
  EXPECT_NE(json.find("\"kv_cache_tokens\": 14444"), std::string::npos);
}

TEST(HonestWords, TheGridsSmallestIsSaid) {
  // Short contexts: one iteration at every buffer, so the smallest qualifies.
  std::vector<Batch> batches;
  for (uint32_t i = 0; i < 10; ++i) batches.push_back(batch({100 + i}, {10}, 16, 4096, 16));
  sweeps::SweepGrid g;
  g.buffer_tokens = {4096, 8192};
  g.max_chunks = {16};
  g.policies = policies::parse_policies("vllm", Policy{});
  const sweeps::SweepResult s = sweeps::run_sweep(batches, g);
  sweeps::RecommendOptions o;
  o.max_iterations = 1;
  const std::vector<sweeps::Recommendation> recs = sweeps::recommend(s, o);
  ASSERT_TRUE(recs[0].row);
  EXPECT_EQ(recs[0].grid_edge, "smallest");
  sweeps::SweepReport rep;
  rep.sweep = &s;
  rep.recommend_options = o;
  rep.recommendations = recs;
  EXPECT_NE(sweeps::format_sweep_table(rep).find("the grid's smallest buffer: a smaller one may do too; sweep "
                                                 "--buffer-tokens 512:2048:x2"),
            std::string::npos);
}

TEST(HonestWords, ARefusingChoiceSaysHowMany) {
  // 100 batches, one of which max refuses at M=1 (it needs two chunks): p99 allows it; the text counts it.
  std::vector<Batch> batches;
  for (uint32_t i = 0; i < 99; ++i) batches.push_back(batch({100}, {10}, 16, 4096, 1));
  batches.push_back(batch({9000}, {10}, 16, 4096, 1));
  sweeps::SweepGrid g;
  g.buffer_tokens = {4096};
  g.max_chunks = {1};
  g.policies = policies::parse_policies("max", Policy{});
  const sweeps::SweepResult s = sweeps::run_sweep(batches, g);
  ASSERT_EQ(s.rows[0].refused, 1u);
  sweeps::RecommendOptions o;
  o.max_iterations = 1;
  sweeps::SweepReport rep;
  rep.sweep = &s;
  rep.recommend_options = o;
  rep.recommendations = sweeps::recommend(s, o);
  ASSERT_TRUE(rep.recommendations[0].row);
  const std::string text = sweeps::format_sweep_table(rep);
  EXPECT_NE(text.find("refuses 1 of 100 batches (1.00%), within what p99 allows"), std::string::npos) << text;
}


// MAX's default runs one shot (max_chunks 1) at its buffer: priced at M=1, its refusals counted there,
// not at the group's M=16 (where these batches all fit in 4 to 7 chunks of 16384 rows).
TEST(HonestWords, MaxsDefaultIsPricedOneShot) {
  sweeps::SweepGrid g;
  g.buffer_tokens = {16384, 65536};
  g.max_chunks = {16};
  g.policies = policies::parse_policies("max", Policy{});
  g.models = {models::find_model_preset("deepseek-v3")};
  g.tps = {8};
  g.max_one_shot = {16384};
  const sweeps::SweepResult s = sweeps::run_sweep(long_context_batches(), g);
  sweeps::RecommendOptions o;
  o.max_iterations = 8;
  o.engines = policies::EngineSettings{163840, 256, 128, 8192};
  const std::vector<sweeps::Recommendation> recs = sweeps::recommend(s, o);
  ASSERT_EQ(recs.size(), 1u);  // the one-shot row is the default's, in no group of its own
  ASSERT_TRUE(recs[0].row);
  EXPECT_EQ(s.rows[*recs[0].row].buffer_tokens, 16384u);
  EXPECT_EQ(s.rows[*recs[0].row].refused, 0u);
  ASSERT_TRUE(recs[0].default_row);
  const sweeps::SweepRow& d = s.rows[*recs[0].default_row];
  EXPECT_EQ(d.max_chunks, 1u);
  EXPECT_EQ(d.buffer_tokens, 16384u);
  EXPECT_EQ(d.refused, 40u);
  sweeps::SweepReport rep;
  rep.sweep = &s;
  rep.recommend_options = o;
  rep.recommendations = recs;
  const std::string text = sweeps::format_sweep_table(rep);
  EXPECT_NE(text.find("at it (one shot, priced at M=1 and its refusals counted there): it refuses 40 of 40 batches"),
            std::string::npos)
      << text;
  const std::string json = sweeps::format_sweep_json(rep);
  EXPECT_NE(json.find("\"max_chunks\": 1,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"refused\": 40"), std::string::npos) << json;
}

}  // namespace
}  // namespace mlaplan
