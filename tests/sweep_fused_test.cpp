// mlaplan's fused loop in the sweep (issue 64): its buffer's memory (K and V alone), the rows a fused
// cost file prices, and the recommendation's comparison with the engines' loop over the same batches.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mlaplan/cost/cost_model.hpp"
#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/models/model.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/sweeps/sweep.hpp"
#include "mlaplan/sweeps/sweep_format.hpp"
#include "mlaplan/workloads/batch_formation.hpp"
#include "mlaplan/workloads/workload.hpp"

namespace mlaplan::sweeps {

namespace fused_test {

using nlohmann::json;

json shipped_h100() {
  std::ifstream f(std::string(MLAPLAN_SOURCE_DIR) + "/costs/h100/deepseek-v3-tp8-bf16-fa3.json");
  return json::parse(f);
}

// The shipped H100 file as mlaplan's fused loop's: its per-row cost (the up-projection's) times `scale`.
cost::CostModel fused_file(double scale) {
  json j = shipped_h100();
  j["kernels"]["up_projection"] = "fused";
  j["coefficients"]["per_row_us"] = j["coefficients"]["per_row_us"].get<double>() * scale;
  return cost::parse_cost_model(j.dump(), "fused.json");
}

cost::CostModel engine_file() { return cost::parse_cost_model(shipped_h100().dump(), "engine.json"); }

std::vector<Batch> agent_batches() {
  auto source = workloads::preset_source(workloads::find_workload_preset("coding-agent"), 3);
  return workloads::form_batches(*source, workloads::BatchFormation{}, workloads::BatchSettings{}, 150, 3);
}

SweepGrid grid_of(const cost::CostModel& c) {
  SweepGrid g;
  for (uint32_t n = 16384; n <= 1048576; n *= 2) g.buffer_tokens.push_back(n);
  g.max_chunks = {16};
  g.policies = policies::parse_policies("vllm", policies::Policy{});
  policies::name_engines_for(g.policies, c.sm);  // "vllm (packed)", as sweep names it
  g.models = {models::find_model_preset("deepseek-v3")};
  g.tps = {8};
  g.costs = {c};
  return g;
}

RecommendOptions by_time() {
  RecommendOptions o;
  o.objective = Objective::time;
  return o;
}

double p99_ms(const SweepRow& r) { return r.time->step_ms(r.time->at(0.99)); }

// The engines' sweep, the fused loop's over the same batches, and the report that compares them.
struct Compared {
  SweepResult engines, fused;
  SweepReport report;
};

void compare(Compared& c, double scale) {
  const std::vector<Batch> batches = agent_batches();
  c.engines = run_sweep(batches, grid_of(engine_file()));
  c.fused = run_sweep(batches, grid_of(fused_file(scale)));
  c.report.sweep = &c.engines;
  c.report.recommend_options = by_time();
  c.report.recommendations = recommend(c.engines, *c.report.recommend_options);
  c.report.fused = &c.fused;
  compare_fused_loop(c.report.recommendations, c.engines, c.fused, *c.report.recommend_options);
}

}  // namespace fused_test

using namespace fused_test;

// K [rows, 16, 128 + 64] and V [rows, 16, 128] in bf16: 6,144 + 4,096 = 10,240 B a row for DeepSeek-V3
// at TP 8, no latent row and no K_nope|V beside the K concat (the engines' 15,488).
TEST(FusedLoopMemory, KAndVAloneExactBytes) {
  const models::BufferMemory m = models::buffer_memory(models::find_model_preset("deepseek-v3"), 8, models::Dtype::bf16);
  EXPECT_EQ(m.k_bytes_per_row, 16u * 192 * 2);
  EXPECT_EQ(m.v_bytes_per_row, 16u * 128 * 2);
  EXPECT_EQ(m.fused_loop_bytes(1), 10240u);
  EXPECT_EQ(m.reserved_bytes(1), 15488u);
  EXPECT_EQ(m.fused_loop_bytes(65536), 640u << 20);
  EXPECT_EQ(m.kv_cache_tokens(m.fused_loop_bytes(65536)), 9549u);  // 640 MiB / (1,152 B x 61 layers)
  const models::BufferMemory fp8 = models::buffer_memory(models::find_model_preset("deepseek-v3"), 8, models::Dtype::fp8);
  EXPECT_EQ(fp8.fused_loop_bytes(1), 5120u);
  EXPECT_EQ(m.fused_loop_bytes(UINT64_MAX), UINT64_MAX);  // saturates, as the others do
}

// Rows a fused file prices hold its memory: what they reserve, what the budget checks, and what the
// screen and the JSON say.
TEST(FusedLoopMemory, AFusedFilesRowsReserveKAndV) {
  const SweepResult s = run_sweep(agent_batches(), grid_of(fused_file(0.5)));
  ASSERT_FALSE(s.rows.empty());
  for (const SweepRow& r : s.rows) {
    EXPECT_TRUE(r.fused_loop) << r.setting();
    EXPECT_EQ(reserved_bytes(r), uint64_t{r.buffer_tokens} * 10240) << r.setting();
    EXPECT_EQ(held_bytes(r), reserved_bytes(r)) << r.setting();
  }
  const SweepResult e = run_sweep(agent_batches(), grid_of(engine_file()));
  EXPECT_FALSE(e.rows.front().fused_loop);
  EXPECT_EQ(reserved_bytes(e.rows.front()), uint64_t{e.rows.front().buffer_tokens} * 15488);
  EXPECT_EQ(held_bytes(e.rows.front()), uint64_t{e.rows.front().buffer_tokens} * (15488 - 1152));
  SweepReport rep;
  rep.sweep = &s;
  RecommendOptions o = by_time();
  o.memory_budget = uint64_t{100} << 20;  // below every buffer's: each is passed over, saying why
  rep.recommend_options = o;
  rep.recommendations = recommend(s, o);
  const std::string text = format_sweep_brief(rep);
  EXPECT_NE(text.find("640 MiB      9,549"), std::string::npos) << text;  // 64K rows in the table
  EXPECT_NE(text.find("reserves: mlaplan's fused loop's K and V"), std::string::npos) << text;
  EXPECT_NE(text.find("K + V within 100 MiB"), std::string::npos) << text;
  EXPECT_EQ(text.find("+ K concat"), std::string::npos) << text;  // the legend says there is none
  // The budget checks K and V: 512K rows hold 5.00 GiB of them.
  const std::string wide = format_sweep_table(rep);
  EXPECT_NE(wide.find("memory 5.00 GiB (K 3.00 GiB + V 2.00 GiB) > budget 100 MiB"), std::string::npos) << wide;
  rep.recommend_options = by_time();
  rep.recommendations = recommend(s, by_time());
  const json j = json::parse(format_sweep_json(rep));
  EXPECT_EQ(j["costs"][0]["up_projection"], "fused");
  EXPECT_EQ(j["rows"][2]["memory_bytes"], 65536u * 10240);
  const json& g = j["recommendation"]["groups"][0];
  EXPECT_EQ(g["reserved_bytes"], g["buffer_tokens"].get<uint64_t>() * 10240);
  EXPECT_FALSE(g.contains("fused_loop"));  // the sweep is the fused loop's: nothing beside it
}

// Beside the engines' choice: the fused loop's time at the chosen buffer, and its smallest buffer whose
// p99 is at most the choice's, with what that reserves.
TEST(FusedLoopComparison, TheSmallestBufferAsFastAsTheChoice) {
  Compared c;
  compare(c, 0.5);
  ASSERT_EQ(c.report.recommendations.size(), 1u);
  const Recommendation& r = c.report.recommendations.front();
  ASSERT_TRUE(r.row && r.fused_row && r.fused_same_time);
  const SweepRow &chosen = c.engines.rows[*r.row], &at = c.fused.rows[*r.fused_row], &same = c.fused.rows[*r.fused_same_time];
  EXPECT_EQ(at.buffer_tokens, chosen.buffer_tokens);
  const double target = p99_ms(chosen);
  EXPECT_LT(p99_ms(at), target);  // the up-projection at half the cost
  EXPECT_LE(p99_ms(same), target);
  for (const SweepRow& x : c.fused.rows)  // no smaller buffer is as fast
    if (x.buffer_tokens < same.buffer_tokens) EXPECT_GT(p99_ms(x), target) << x.setting();
  EXPECT_LT(same.buffer_tokens, chosen.buffer_tokens);

  const std::string text = format_sweep_brief(c.report);
  const std::string first = fmt::format("      mlaplan's fused loop (same plan; mlaplan.prefill --policy packed+fused): p99 {}/step at {} ({:+.1f}%)\n",
                                        format_ms(p99_ms(at)), at.buffer_tokens, 100.0 * (p99_ms(at) / target - 1));
  EXPECT_NE(text.find(first), std::string::npos) << text;
  const uint64_t bytes = uint64_t{same.buffer_tokens} * 10240, tokens = bytes / (1152 * 61);
  const uint64_t before = reserved_bytes(chosen) / (1152 * 61);
  const std::string second = fmt::format("        as fast as the choice from {} rows (p99 {}), reserving {} = {} KV-cache tokens, {} fewer\n",
                                         same.buffer_tokens, format_ms(p99_ms(same)), io::format_bytes(bytes),
                                         with_commas(tokens), with_commas(before - tokens));
  EXPECT_NE(text.find(second), std::string::npos) << text;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 120u) << line;

  const json g = json::parse(format_sweep_json(c.report))["recommendation"]["groups"][0];
  ASSERT_TRUE(g.contains("fused_loop")) << g.dump();
  const json& f = g["fused_loop"];
  EXPECT_EQ(f["cost_file"], "fused.json");
  EXPECT_EQ(f["executor_policy"], "packed+fused");
  EXPECT_NEAR(f["step_ms"].get<double>(), p99_ms(at), 1e-9);
  EXPECT_NEAR(f["change"].get<double>(), p99_ms(at) / target - 1, 1e-12);
  EXPECT_EQ(f["same_time"]["buffer_tokens"], same.buffer_tokens);
  EXPECT_EQ(f["same_time"]["reserved_bytes"], bytes);
  EXPECT_EQ(f["same_time"]["kv_cache_tokens"], tokens);
}

// Without the fused sweep the recommendation is the engines' alone; where no fused buffer of the grid is
// as fast as the choice, the line says so.
TEST(FusedLoopComparison, NoneBesideOrNoneAsFast) {
  Compared c;
  compare(c, 4.0);  // an up-projection four times the engines': slower at every buffer
  const Recommendation& r = c.report.recommendations.front();
  ASSERT_TRUE(r.fused_row);
  EXPECT_FALSE(r.fused_same_time);
  const std::string text = format_sweep_brief(c.report);
  EXPECT_NE(text.find("\n        no buffer on the grid is as fast as the choice (p99 "), std::string::npos) << text;
  EXPECT_TRUE(json::parse(format_sweep_json(c.report))["recommendation"]["groups"][0]["fused_loop"]["same_time"].is_null());
  c.report.fused = nullptr;
  EXPECT_EQ(format_sweep_brief(c.report).find("fused loop"), std::string::npos);
  EXPECT_FALSE(json::parse(format_sweep_json(c.report))["recommendation"]["groups"][0].contains("fused_loop"));
  // By iterations there is no time to compare.
  std::vector<Recommendation> recs = recommend(c.engines, RecommendOptions{});
  compare_fused_loop(recs, c.engines, c.fused, RecommendOptions{});
  EXPECT_FALSE(recs.front().fused_row);
}

}  // namespace mlaplan::sweeps
