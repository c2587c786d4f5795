// sweep --gpu beside mlaplan's fused loop, end to end (issue 64). A copy of the executable in <prefix>/bin
// finds a fused file of known coefficients under <prefix>/share/mlaplan/costs, as an install finds its
// shipped files (gpu_options.cpp's cost_roots), before the source tree's shipped one; the engines' file
// is the source tree's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

using mlaplan::test::CliResult;
using mlaplan::test::has;
using mlaplan::test::lines_of;
using mlaplan::test::run_cli;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kEngineFile = MLAPLAN_SOURCE_DIR "/costs/h100/deepseek-v3-tp8-bf16-fa3.json";
// The README's journey, on fewer batches.
const std::string kReadme = "sweep --gpu h100 --model deepseek-v3 --tp 8 --workload coding-agent --policy vllm "
                            "--buffer-tokens 16384:1048576:x2 --recommend --objective time --batches 300 --no-progress";

// A prefix holding a copy of the executable and, with `fused`, the shipped H100 file as the fused loop's
// (its per-row cost, the up-projection's, halved).
fs::path prefix(const std::string& name, bool fused) {
  const fs::path root = mlaplan::test::install_prefix(name);
  if (fused) {
    const fs::path dir = mlaplan::test::costs_dir(root, "h100");
    json j = json::parse(std::ifstream(kEngineFile));
    j["kernels"]["up_projection"] = "fused";
    j["coefficients"]["per_row_us"] = j["coefficients"]["per_row_us"].get<double>() * 0.5;
    std::ofstream(dir / "deepseek-v3-tp8-bf16-fa3-fused.json") << j.dump(1);
  }
  return root;
}

CliResult run_copy(const fs::path& root, const std::string& args) { return mlaplan::test::run_installed(root, args); }

const json& group_of(const json& doc) { return doc["recommendation"]["groups"][0]; }

}  // namespace

TEST(SweepFusedCli, TheRecommendationGainsTheFusedLoopsLines) {
  const fs::path root = prefix("fused_line", true);
  const CliResult r = run_copy(root, kReadme);
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t line = r.out.find("\n      mlaplan's fused loop (same plan; mlaplan.prefill --policy packed+fused): p99 ");
  ASSERT_NE(line, std::string::npos) << r.out;
  EXPECT_LT(r.out.find("vLLM's default: 65536 rows"), line) << r.out;
  EXPECT_LT(line, r.out.find("\nbatches: ")) << r.out;
  EXPECT_TRUE(has(r.out.substr(line), " at 524288 (-")) << r.out;
  EXPECT_TRUE(has(r.out.substr(line), "\n        as fast as the choice from ")) << r.out;
  for (const std::string& l : lines_of(r.out)) EXPECT_LE(l.size(), 120u) << l;
  // The engines' file prices the table: its header names it alone.
  EXPECT_TRUE(has(r.out, "costs/h100/deepseek-v3-tp8-bf16-fa3.json")) << r.out;
  EXPECT_FALSE(has(r.out.substr(0, r.out.find("\n\n")), "fused")) << r.out;
  // The picture draws the fused loop's times beside the engine's, as a dotted line in the time panel.
  const std::string svg = (root / "s.svg").string();
  const CliResult pic = run_copy(root, kReadme + " --svg " + svg);
  ASSERT_EQ(pic.code, 0) << pic.err;
  std::ifstream in(svg);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(has(text, "class=\"fused-series\"")) << text.substr(0, 300);
  EXPECT_TRUE(has(text, ">dotted: p99 ms per step in mlaplan")) << text.substr(0, 300);
  fs::remove_all(root);
}

// Without a fused file (none ships for Kimi-K2), with --cost, or by iterations: the engines' answer alone.
TEST(SweepFusedCli, NoFusedFileNoCostFileNoLine) {
  const fs::path bare = prefix("fused_none", false), with = prefix("fused_cost", true);
  std::string kimi = kReadme;
  kimi.replace(kimi.find("deepseek-v3"), 11, "kimi-k2");
  const CliResult none = run_copy(bare, kimi);
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_TRUE(has(none.out, "vLLM's default: ")) << none.out;
  EXPECT_FALSE(has(none.out, "fused loop")) << none.out;
  EXPECT_EQ(none.err, "");
  const CliResult cost = run_copy(with, kReadme + " --cost " + kEngineFile);
  ASSERT_EQ(cost.code, 0) << cost.err;
  EXPECT_FALSE(has(cost.out, "fused loop")) << cost.out;
  const CliResult iterations = run_copy(with, "sweep --gpu h100 --model deepseek-v3 --tp 8 --workload coding-agent --policy vllm "
                                              "--recommend --max-iterations 4 --batches 300 --no-progress");
  ASSERT_EQ(iterations.code, 0) << iterations.err;
  EXPECT_FALSE(has(iterations.out, "fused loop")) << iterations.out;
  fs::remove_all(bare);
  fs::remove_all(with);
}

// The JSON's fused_loop against the fused loop's own sweep (--loop fused): its time at the chosen buffer,
// and the smallest buffer whose p99 is at most the choice's, with its K and V in bytes.
TEST(SweepFusedCli, TheJsonAgreesWithTheFusedLoopsOwnSweep) {
  const fs::path root = prefix("fused_json", true);
  const CliResult engines = run_copy(root, kReadme + " --format json"), fused = run_copy(root, kReadme + " --loop fused --format json");
  ASSERT_EQ(engines.code, 0) << engines.err;
  ASSERT_EQ(fused.code, 0) << fused.err;
  const json e = json::parse(engines.out), f = json::parse(fused.out);
  EXPECT_EQ(e["costs"][0]["up_projection"], "unfused");
  EXPECT_EQ(f["costs"][0]["up_projection"], "fused");
  EXPECT_FALSE(group_of(f).contains("fused_loop"));  // priced by the fused loop: nothing beside it
  const json& g = group_of(e);
  ASSERT_TRUE(g.contains("fused_loop")) << g.dump();
  const json& cmp = g["fused_loop"];
  const double target = e["rows"][g["row"].get<size_t>()]["step_ms"]["p99"].get<double>();
  uint64_t smallest = 0;
  for (const json& row : f["rows"]) {
    if (row["buffer_tokens"] == g["buffer_tokens"]) EXPECT_DOUBLE_EQ(cmp["step_ms"].get<double>(), row["step_ms"]["p99"].get<double>());
    if (!smallest && row["step_ms"]["p99"].get<double>() <= target) smallest = row["buffer_tokens"].get<uint64_t>();
    EXPECT_EQ(row["memory_bytes"], row["buffer_tokens"].get<uint64_t>() * 10240);  // K and V alone
  }
  ASSERT_GT(smallest, 0u);
  EXPECT_EQ(cmp["same_time"]["buffer_tokens"], smallest);
  EXPECT_EQ(cmp["same_time"]["reserved_bytes"], smallest * 10240);
  EXPECT_EQ(cmp["same_time"]["kv_cache_tokens"], smallest * 10240 / (1152 * 61));
  EXPECT_EQ(cmp["executor_policy"], "packed+fused");
  EXPECT_TRUE(has(cmp["cost_file"].get<std::string>(), "deepseek-v3-tp8-bf16-fa3-fused.json"));
  fs::remove_all(root);
}

// --loop fused: the table's memory is the fused loop's K and V (640 MiB at 64K rows of DeepSeek-V3 TP 8),
// the choice's reserve too; run's memory line says the same.
TEST(SweepFusedCli, LoopFusedShowsItsOwnMemory) {
  const fs::path root = prefix("fused_memory", true);
  const CliResult r = run_copy(root, kReadme + " --loop fused");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "vllm (packed)     64K  -")) << r.out;
  EXPECT_TRUE(has(r.out, "640 MiB      9,549\n")) << r.out;
  EXPECT_TRUE(has(r.out, "reserves: mlaplan's fused loop's K and V on each GPU")) << r.out;
  EXPECT_TRUE(has(r.out, "(K 384 MiB + V 256 MiB) = 9,549 KV-cache tokens")) << r.out;  // vLLM's default, 64K rows
  EXPECT_FALSE(has(r.out, "(latent")) << r.out;  // the legend says there is none
  for (const std::string& l : lines_of(r.out)) EXPECT_LE(l.size(), 120u) << l;
  const CliResult run = run_copy(root, "run " MLAPLAN_SOURCE_DIR "/scenarios/worked-example.json --gpu h100 --loop fused "
                                       "--model deepseek-v3 --tp 8 --format json");
  ASSERT_EQ(run.code, 0) << run.err;
  const json m = json::parse(run.out)["buffer_memory"];
  EXPECT_EQ(m["bytes_per_row"], 10240);
  EXPECT_EQ(m["k_concat_bytes"], 0);
  EXPECT_EQ(m["latent_bytes"], 0);
  fs::remove_all(root);
}
