// Batch formation, sweeps and recommendations against hand-computed cases.
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "mlaplan/errors.hpp"
#include "mlaplan/workloads/batch_formation.hpp"
#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/sweeps/sweep.hpp"
#include "mlaplan/sweeps/sweep_format.hpp"
#include "test_batches.hpp"

namespace mlaplan::sweeps {

namespace {

std::vector<uint32_t> input_lengths(const Batch& b) {
  std::vector<uint32_t> v;
  for (uint32_t i = 0; i < b.batch_size(); ++i) v.push_back(b.input_length(i));
  return v;
}

// By hand: budget 8,192. Step 0: r0's 5,000 new tokens, then 3,192 of r1's 5,000. Step 1: r1's other
// 1,808 (its 100 cached plus the 3,192 prefilled), then 6,384 of r2's 10,000. Step 2: r2's other 3,616.
TEST(BatchFormation, TokenBudgetSplitsLikeChunkedPrefill) {
  auto source = workloads::list_source({{0, 5000}, {100, 5000}, {0, 10000}}, "three");
  workloads::BatchFormation f;
  f.token_budget = 8192;
  const std::vector<Batch> b = workloads::form_batches(*source, f, workloads::BatchSettings{}, 100, 1);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].cache_lengths, (std::vector<uint32_t>{0, 100}));
  EXPECT_EQ(input_lengths(b[0]), (std::vector<uint32_t>{5000, 3192}));
  EXPECT_EQ(b[1].cache_lengths, (std::vector<uint32_t>{3292, 0}));
  EXPECT_EQ(input_lengths(b[1]), (std::vector<uint32_t>{1808, 6384}));
  EXPECT_EQ(b[2].cache_lengths, (std::vector<uint32_t>{6384}));
  EXPECT_EQ(input_lengths(b[2]), (std::vector<uint32_t>{3616}));
  EXPECT_EQ(b[2].page_size, 128u);
}

TEST(BatchFormation, MaxSequencesAndBatchSizes) {
  std::vector<workloads::Request> five(5, workloads::Request{7, 3});
  workloads::BatchFormation f;
  f.max_sequences = 2;
  auto s1 = workloads::list_source(five, "five");
  const std::vector<Batch> by_seqs = workloads::form_batches(*s1, f, workloads::BatchSettings{}, 100, 1);
  ASSERT_EQ(by_seqs.size(), 3u);  // 2 + 2 + 1 sequences, the budget never reached
  EXPECT_EQ(by_seqs[2].batch_size(), 1u);
  f.mode = workloads::BatchFormation::Mode::batch_size;
  f.min_batch = f.max_batch = 3;
  auto s2 = workloads::list_source(five, "five");
  const std::vector<Batch> by_size = workloads::form_batches(*s2, f, workloads::BatchSettings{}, 100, 1);
  ASSERT_EQ(by_size.size(), 2u);
  EXPECT_EQ(by_size[0].batch_size(), 3u);
  EXPECT_EQ(by_size[1].batch_size(), 2u);
  EXPECT_EQ(by_size[1].cache_lengths[0], 7u);
  auto s3 = workloads::list_source(five, "five");
  EXPECT_EQ(workloads::form_batches(*s3, f, workloads::BatchSettings{}, 1, 1).size(), 1u);  // max_batches caps
}

TEST(BatchFormation, CappedSourceDropsLongRequests) {
  auto s = workloads::capped_source(workloads::list_source({{100, 10}, {5, 5}, {200, 1}}, "t"), 50);
  ASSERT_EQ(s->next()->cached_tokens, 5u);
  EXPECT_FALSE(s->next().has_value());
  EXPECT_NE(s->describe().find("2 requests over max_model_len 50 dropped"), std::string::npos) << s->describe();
}

Batch two_contexts() { return test::make_batch(16, 64, 2, {100, 50}, {0, 1, 2}); }  // max: L = 112 + 64
Batch one_short() { return test::make_batch(16, 64, 2, {10}, {0, 5}); }           // max: L = 16

SweepGrid small_grid() {
  SweepGrid g;
  g.buffer_tokens = {64, 128};
  g.max_chunks = {2};
  g.policies = {policies::Policy{}, policies::Policy{policies::PolicyKind::packed}};
  return g;
}

// By hand. max, N = 64: the first batch's 176 padded rows need 3 chunks > M = 2 (refused); the
// second 1. N = 128: 2 and 1. packed, N = 64: 3 chunks (policy_test's PackedSplitsAtPageMultiples)
// and 1; N = 128: 100 + a 16-token split, then 34: 2 chunks, and 1.
TEST(Sweep, HandComputedIterations) {
  const SweepResult r = run_sweep({two_contexts(), one_short()}, small_grid());
  ASSERT_EQ(r.rows.size(), 4u);
  const SweepRow& max64 = r.rows[0];
  EXPECT_EQ(max64.setting(), "max N=64 M=2");
  EXPECT_EQ(max64.refused, 1u);
  EXPECT_EQ(max64.max_iterations, 3u);  // the chunks the refused batch needs
  EXPECT_EQ(max64.p50, 1u);
  EXPECT_DOUBLE_EQ(max64.mean_iterations, 2.0);
  EXPECT_EQ(max64.iterations_at(0.99), std::numeric_limits<uint32_t>::max());
  EXPECT_NE(max64.first_refusal.find("needs 3 chunks"), std::string::npos) << max64.first_refusal;
  const SweepRow& max128 = r.rows[1];
  EXPECT_EQ(max128.refused, 0u);
  EXPECT_EQ(max128.iterations_at(0.99), 2u);
  // Padding over the planned batches, both at N = 128: 176 + 16 = 192 rows for (100 + 1 + 50 + 1) +
  // (10 + 5) = 167 tokens.
  EXPECT_NEAR(max128.padding_overhead, (192.0 - 167.0) / 167.0, 1e-12);
  // Fill: batch 1 176 / (2 x 128), batch 2 16 / 128.
  EXPECT_NEAR(max128.mean_fill, (176.0 / 256.0 + 16.0 / 128.0) / 2, 1e-12);
  const SweepRow& packed64 = r.rows[2];
  EXPECT_EQ(packed64.policy.name(), "packed");
  EXPECT_FALSE(packed64.max_chunks.has_value());
  EXPECT_EQ(packed64.max_iterations, 3u);
  EXPECT_EQ(packed64.refused, 0u);
  EXPECT_DOUBLE_EQ(packed64.padding_overhead, 0.0);
  EXPECT_EQ(r.rows[3].iterations_at(1.0), 2u);
}

TEST(Sweep, ThreadsDoNotChangeResults) {
  std::vector<Batch> batches;
  auto source = workloads::preset_source(workloads::find_workload_preset("mooncake-conv"), 3);
  batches = workloads::form_batches(*source, workloads::BatchFormation{}, workloads::BatchSettings{}, 300, 3);
  SweepGrid g = small_grid();
  g.buffer_tokens = {4096, 16384, 65536};
  g.max_chunks = {4, 16};
  g.policies.push_back(policies::Policy{policies::PolicyKind::even_split});
  SweepOptions one;
  one.threads = 1;
  SweepOptions two;
  two.threads = 2;
  const SweepResult a = run_sweep(batches, g, one), b = run_sweep(batches, g, two);
  ASSERT_EQ(a.rows.size(), 3u * 2 + 3 + 3);
  for (size_t i = 0; i < a.rows.size(); ++i) {
    EXPECT_EQ(a.rows[i].iterations, b.rows[i].iterations) << a.rows[i].setting();
    EXPECT_EQ(a.rows[i].setting(), b.rows[i].setting());
  }
}

// Progress comes within a setting, not only between settings: one setting of guided over a million
// batches takes minutes. At every report the counts only grow; the last says all is done.
TEST(Sweep, ProgressWithinASetting) {
  auto source = workloads::preset_source(workloads::find_workload_preset("mooncake-conv"), 3);
  const std::vector<Batch> batches =
      workloads::form_batches(*source, workloads::BatchFormation{}, workloads::BatchSettings{}, 5000, 3);
  SweepGrid g = small_grid();
  g.buffer_tokens = {4096};
  g.policies = {policies::Policy{policies::PolicyKind::packed}};
  SweepOptions o;
  o.threads = 1;
  o.progress_every = 0;  // every count reported
  std::vector<SweepProgress> seen;
  o.work_progress = [&](const SweepProgress& p) { seen.push_back(p); };
  run_sweep(batches, g, o);
  ASSERT_GE(seen.size(), 4u);
  size_t within = 0;
  for (size_t i = 0; i < seen.size(); ++i) {
    within += std::string(seen[i].phase) == "settings" && seen[i].settings_done == 0 && seen[i].done > 0;
    if (i > 0 && std::string(seen[i].phase) == seen[i - 1].phase) EXPECT_GE(seen[i].done, seen[i - 1].done);
  }
  EXPECT_GE(within, 3u);  // 5,000 batches: a report every 1,024
  EXPECT_EQ(seen.back().done, seen.back().total);
  EXPECT_EQ(seen.back().total, 5000u);
  EXPECT_EQ(seen.back().settings_done, 1u);
}

TEST(Recommend, SmallestQualifyingBufferAndWhySmallerFail) {
  const SweepResult r = run_sweep({two_contexts(), one_short()}, small_grid());
  RecommendOptions o;
  o.max_iterations = 2;
  const std::vector<Recommendation> rec = recommend(r, o);
  ASSERT_EQ(rec.size(), 2u);
  EXPECT_EQ(rec[0].group, "max M=2");
  ASSERT_TRUE(rec[0].row.has_value());
  EXPECT_EQ(r.rows[*rec[0].row].buffer_tokens, 128u);
  ASSERT_EQ(rec[0].rejected.size(), 1u);
  EXPECT_NE(rec[0].rejected[0].why.find("refuses 1 of 2 batches (50.00%)"), std::string::npos) << rec[0].rejected[0].why;
  EXPECT_EQ(rec[1].group, "packed");
  EXPECT_NE(rec[1].rejected[0].why.find("p99 needs 3 iterations > 2"), std::string::npos) << rec[1].rejected[0].why;
  // At the median one iteration suffices everywhere but max's N = 64 half refused... p50 of [1, refused] is 1.
  o.quantile = 0.5;
  o.max_iterations = 1;
  EXPECT_EQ(r.rows[*recommend(r, o)[0].row].buffer_tokens, 64u);
}

TEST(Recommend, MemoryBudgetNeedsAModelAndRejectsLargeBuffers) {
  SweepGrid g = small_grid();
  RecommendOptions o;
  o.max_iterations = 2;
  o.memory_budget = 10u << 20;
  EXPECT_THROW(recommend(run_sweep({two_contexts()}, g), o), InputError);
  g.models = {models::find_model_preset("deepseek-v3")};  // 64 KiB + 48 KiB per row at TP 1 in bf16
  const SweepResult r = run_sweep({two_contexts(), one_short()}, g);
  const std::vector<Recommendation> rec = recommend(r, o);
  EXPECT_FALSE(rec[0].row.has_value());  // 128 rows x 112 KiB = 14 MiB > 10 MiB
  ASSERT_EQ(rec[0].rejected.size(), 2u);
  EXPECT_NE(rec[0].rejected[1].why.find("memory 14.0 MiB"), std::string::npos) << rec[0].rejected[1].why;
  o.memory_budget = 16u << 20;
  EXPECT_EQ(r.rows[*recommend(r, o)[0].row].buffer_tokens, 128u);
}

TEST(Recommend, ParseQuantileAndBytes) {
  EXPECT_DOUBLE_EQ(parse_quantile("p99"), 0.99);
  EXPECT_DOUBLE_EQ(parse_quantile("p99.9"), 0.999);
  EXPECT_DOUBLE_EQ(parse_quantile("max"), 1.0);
  // The share means the same as the percent (the JSON writes 0.99 for p99); a bare 99 is ambiguous.
  EXPECT_DOUBLE_EQ(parse_quantile("0.99"), parse_quantile("p99"));
  EXPECT_DOUBLE_EQ(parse_quantile("0.999"), 0.999);
  EXPECT_DOUBLE_EQ(parse_quantile("1"), 1.0);
  EXPECT_DOUBLE_EQ(parse_quantile("MAX"), 1.0);
  EXPECT_THROW(parse_quantile("99.9"), InputError);
  EXPECT_THROW(parse_quantile("0"), InputError);
  EXPECT_THROW(parse_quantile("nan"), InputError);
  EXPECT_THROW(parse_quantile("p1e1"), InputError);
  EXPECT_EQ(quantile_name(0.99), "p99");
  EXPECT_EQ(quantile_name(1.0), "max");
  EXPECT_THROW(parse_quantile("p0"), InputError);
  EXPECT_THROW(parse_quantile("p101"), InputError);
  EXPECT_THROW(parse_quantile("q9"), InputError);
  EXPECT_EQ(parse_byte_size("8GiB"), uint64_t{8} << 30);
  EXPECT_EQ(parse_byte_size("512 MiB"), uint64_t{512} << 20);
  EXPECT_EQ(parse_byte_size("2GB"), 2000000000u);
  EXPECT_EQ(parse_byte_size("8gib"), uint64_t{8} << 30);  // units in any case, as every named value
  EXPECT_THROW(parse_byte_size("0"), InputError);
  EXPECT_THROW(parse_byte_size("nan"), InputError);
  EXPECT_THROW(parse_byte_size("inf"), InputError);
  EXPECT_THROW(parse_byte_size("1e3"), InputError);
  EXPECT_EQ(parse_byte_size("1024"), 1024u);
  EXPECT_THROW(parse_byte_size("8 gigs"), InputError);
  EXPECT_THROW(parse_byte_size("-1GiB"), InputError);
}

TEST(SweepFormat, EveryFormatCarriesTheRowsAndTheRecommendation) {
  SweepGrid g = small_grid();
  g.models = {models::find_model_preset("kimi-k2")};
  g.tps = {1, 8};
  SweepResult r = run_sweep({two_contexts(), one_short()}, g);
  r.source = "test";
  SweepReport rep{&r, RecommendOptions{}, {}};
  rep.recommend_options->max_iterations = 2;
  rep.recommendations = recommend(r, *rep.recommend_options);
  const auto j = nlohmann::json::parse(format_sweep_json(rep));
  ASSERT_EQ(j["rows"].size(), 8u);
  EXPECT_EQ(j["rows"][1]["tp"], 8);
  EXPECT_EQ(j["rows"][1]["buffer_bytes"], 64u * 4096 / 8 * 8);  // 64 rows x 8 heads x 256 x 2 bytes
  EXPECT_EQ(j["recommendation"]["groups"].size(), 4u);
  const std::string csv = format_sweep_csv(rep);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9);
  const std::string table = format_sweep_table(rep);
  EXPECT_NE(table.find("recommendation: the smallest buffer with at most 2 iterations at p99"), std::string::npos);
  EXPECT_NE(format_sweep_markdown(rep).find("| policy | buffer |"), std::string::npos);
}

}  // namespace
}  // namespace mlaplan::sweeps
