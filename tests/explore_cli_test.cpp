// The explorer's command line end to end: run --policy/--model, gen and sweep, their outputs, and one
// exit-2 line naming the option and the fix for each kind of bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

using nlohmann::json;
using mlaplan::test::run_cli;
using mlaplan::test::slurp;
namespace fs = std::filesystem;
using mlaplan::test::kScenarios;
using mlaplan::test::lines;
using mlaplan::test::scratch;
using mlaplan::test::expect_bad_input;

TEST(ExploreCli, RunEveryPolicyAsJson) {
  const std::string we = kScenarios + "/worked-example.json --backend cpu --format json";
  const json max = json::parse(run_cli("run " + we).out);
  EXPECT_EQ(max["policy"], "max");
  EXPECT_EQ(max["chunks_used"], 2);
  const auto r = run_cli("run " + we + " --policy packed");
  ASSERT_EQ(r.code, 0) << r.err;
  const json packed = json::parse(r.out);
  EXPECT_EQ(packed["policy"], "packed");
  EXPECT_EQ(packed["chunks_used"], 2);
  EXPECT_EQ(packed["padded_tokens"], 600);  // the context streamed: 500 + 100 tokens, no padding
  EXPECT_EQ(packed["buffer_lengths"], json::parse("[500, 100, -1, -1]"));
  EXPECT_EQ(packed["verification"]["status"], "pass");
  const json trt = json::parse(run_cli("run " + we + " --policy packed --packed trtllm").out);
  EXPECT_EQ(trt["policy"], "packed/trtllm");
  EXPECT_EQ(trt["buffer_lengths"], json::parse("[512, 88, -1, -1]"));
  const json even = json::parse(run_cli("run " + we + " --policy even-split --even-split sglang").out);
  EXPECT_EQ(even["policy"], "even-split/sglang");
  EXPECT_EQ(even["chunks_used"], 3);  // 512 / 3 = 170 rows each; ceil(500 / 170) = 3
}

TEST(ExploreCli, RunShowsTheBuffersMemoryForAModel) {
  const auto r = run_cli("run " + kScenarios + "/deepseek-v3-mixed.json --backend cpu --model deepseek-v3 --tp 8");
  ASSERT_EQ(r.code, 0) << r.err;
  // 16 heads x (128 + 128) x 2 bytes = 8 KiB per row; 16,384 rows = 128 MiB; K concat 16 x 192 x 2 x 16,384 = 96 MiB.
  EXPECT_NE(r.out.find("memory    deepseek-v3 TP 8 bf16: buffer 16384 rows x 8.00 KiB = 128 MiB, K concat 96.0 MiB"),
            std::string::npos)
      << r.out;
  const json j = json::parse(run_cli("run " + kScenarios + "/deepseek-v3-mixed.json --backend cpu --format json "
                                     "--model kimi-k2 --dtype fp8")
                                 .out);
  EXPECT_EQ(j["buffer_memory"]["bytes_per_row"], 64 * 256);  // 64 heads x 256 x 1 byte
  EXPECT_EQ(j["buffer_memory"]["buffer_bytes"], 64 * 256 * 16384);
}

TEST(ExploreCli, GenWritesScenariosThatRunAccepts) {
  const fs::path dir = scratch("gen");
  const std::string file = (dir / "conv.json").string();
  const auto g = run_cli("gen --workload azure-conv --batches 3 --seed 5 --buffer-tokens 65536 -o " + file);
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_NE(g.err.find("3 batches"), std::string::npos) << g.err;
  const json j = json::parse(slurp(file));
  ASSERT_EQ(j["scenarios"].size(), 3u);
  EXPECT_EQ(j["scenarios"][1]["name"], "azure-conv-1");
  EXPECT_EQ(j["scenarios"][0]["buffer_token_size"], 65536);
  const auto again = run_cli("gen --workload azure-conv --batches 3 --seed 5 --buffer-tokens 65536");
  EXPECT_EQ(json::parse(again.out), j);  // the seed reproduces the batches
  const auto r = run_cli("run " + file + " --backend cpu --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["scenarios"].size(), 3u);

  // A user's trace, batched by size.
  const std::string csv = (dir / "trace.csv").string();
  std::ofstream(csv) << "cached_tokens,new_tokens\n1000,10\n0,300\n70000,5\n";
  const auto t = run_cli("gen --lengths " + csv + " --batch-size 2 --batches 10");
  ASSERT_EQ(t.code, 0) << t.err;
  const json tj = json::parse(t.out);
  ASSERT_EQ(tj["scenarios"].size(), 2u);
  EXPECT_EQ(tj["scenarios"][1]["cache_lengths"], json::parse("[70000]"));
  fs::remove_all(dir);
}

TEST(ExploreCli, SweepJsonAndRecommendation) {
  const auto r = run_cli("sweep --workload azure-conv --batches 300 --buffer-tokens 1024,8192,65536 --max-chunks 4,16 "
                         "--model deepseek-v3 --tp 8 --recommend --max-iterations 1 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["batches"], 300);
  // 5 buffers (the grid's 3 and the engines' defaults --recommend adds: 32768, 131072), max at two M
  // plus MAX's default one shot (16384 at M=1, a row of its own) and four other policies (all: every engine)
  ASSERT_EQ(j["rows"].size(), 5u * 2 + 1 + 4 * 5);
  EXPECT_EQ(j["rows"][10]["max_chunks"], 1);
  EXPECT_EQ(j["rows"][10]["buffer_tokens"], 16384);
  for (const json& row : j["rows"]) EXPECT_EQ(row["buffer_bytes"], row["buffer_tokens"].get<uint64_t>() * 8192);
  const json& groups = j["recommendation"]["groups"];
  ASSERT_EQ(groups.size(), 6u);  // max M=4, max M=16, packed, even-split, sglang, trtllm
  for (const json& g : groups) EXPECT_FALSE(g["buffer_tokens"].is_null()) << g.dump();
  // A table on stdout and the same JSON in a file.
  const fs::path dir = scratch("sweep");
  const auto t = run_cli("sweep --workload azure-conv --batches 300 --buffer-tokens 1024,8192,65536 --policy packed --json " +
                         (dir / "s.json").string());
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("\npacked      8K  "), std::string::npos) << t.out;  // buffers in K rows
  EXPECT_EQ(json::parse(slurp(dir / "s.json"))["rows"].size(), 3u);
  fs::remove_all(dir);
}

TEST(ExploreCli, SweepOverScenarioFiles) {
  const auto r = run_cli("sweep " + kScenarios + " --buffer-tokens 512,4096 --format csv");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(lines(r.out), 1u + 2 * 5);  // all: every engine
  EXPECT_NE(r.out.find("max,512,16,13,"), std::string::npos) << r.out;  // the 13 bundled scenarios
}

TEST(ExploreCli, BadInputNamesTheOptionAndTheFix) {
  const std::string we = "run " + kScenarios + "/worked-example.json --backend cpu";
  expect_bad_input(we + " --policy evensplit", "--policy evensplit: unknown policy; choose an engine (vllm, sglang, trtllm, max)");
  expect_bad_input(we + " --policy waves/h0-s132", "--policy waves/h0-s132: waves takes its launch's shape as waves/h<heads>-s<slots>");
  expect_bad_input("sweep --workload coding-agent --batches 2 --policy packed,waves/h16", "waves/h16: waves takes its launch's shape");
  expect_bad_input(we + " --model deepseek-v4", "--model deepseek-v4: unknown model");
  expect_bad_input(we + " --model deepseek-v3 --tp 3", "--tp 3");
  expect_bad_input(we + " --tp 8", "add --model");
  expect_bad_input(we + " --model-config /nonexistent/config.json", "/nonexistent/config.json");
  expect_bad_input(we + " --policy packed --packed trtllm --split-align 16", "--split-align");
  expect_bad_input("gen", "--workload: no requests");
  expect_bad_input("gen --workload chat", "--workload chat: unknown workload");
  expect_bad_input("gen --workload azure-conv --batch-size 9:3", "--batch-size 9:3");
  expect_bad_input("gen --lengths /nonexistent.csv", "/nonexistent.csv");
  expect_bad_input("sweep --workload azure-conv --buffer-tokens 0", "--buffer-tokens");
  expect_bad_input("sweep --workload azure-conv --buffer-tokens 4096:1024:x2", "--buffer-tokens");
  expect_bad_input("sweep --workload azure-conv --recommend", "--max-iterations");
  expect_bad_input("sweep --workload azure-conv --max-iterations 2", "add --recommend");
  expect_bad_input("sweep --workload azure-conv --recommend --max-iterations 2 --memory-budget 8GiB", "needs a model");
  expect_bad_input("sweep --workload azure-conv --recommend --max-iterations 2 --quantile q99", "--quantile q99");
  expect_bad_input("sweep --workload azure-conv --model deepseek-v3 --recommend --max-iterations 2 --memory-budget lots",
                   "--memory-budget lots");
  expect_bad_input("sweep " + kScenarios + " --workload azure-conv", "not both");
  expect_bad_input("sweep --workload azure-conv --policy max,evensplit", "--policy");
}

TEST(ExploreCli, FailedSweepLeavesNoOutputFile) {
  const fs::path dir = scratch("atomic");
  const std::string out = (dir / "out.json").string();
  const auto r = run_cli("sweep --workload azure-conv --batches 10 --max-chunks 0 -o " + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(fs::exists(out));
  const auto g = run_cli("gen --workload nope -o " + out);
  EXPECT_EQ(g.code, 2);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(fs::is_empty(dir));  // no temporary left either
  fs::remove_all(dir);
}

// -o into a pipe or device writes into it and never replaces it with a file (as a rename would).
TEST(ExploreCli, OutputIntoAPipeKeepsThePipe) {
  const fs::path dir = scratch("fifo");
  const std::string fifo = (dir / "pipe").string(), captured = (dir / "captured.csv").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(std::system(("cat " + fifo + " > " + captured + " &").c_str()), 0);
  const auto r = run_cli("sweep --workload azure-conv --batches 50 --buffer-tokens 8192 --policy packed --format csv -o " + fifo);
  ASSERT_EQ(r.code, 0) << r.err;
  for (int i = 0; i < 100 && lines(slurp(captured)) < 2; ++i) ::usleep(20000);  // the reader drains the pipe
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(lines(slurp(captured)), 2u);
  fs::remove_all(dir);
}

// sweep --backend gpu plans max with the GPU planner: the same figures as the fast CPU planner. Skips
// where no GPU is usable (the command then exits 3, as --backend gpu does everywhere).
TEST(ExploreCli, SweepOnTheGpuMatchesTheCpu) {
  const std::string args = "sweep --workload mooncake-synthetic --batches 2000 --buffer-tokens 4096:262144:x4 "
                           "--max-chunks 4,16 --policy max --format csv";
  const auto gpu = run_cli(args + " --backend gpu");
  if (gpu.code == 3) GTEST_SKIP() << "no usable GPU: " << gpu.err;
  ASSERT_EQ(gpu.code, 0) << gpu.err;
  const auto cpu = run_cli(args + " --backend cpu");
  ASSERT_EQ(cpu.code, 0) << cpu.err;
  EXPECT_EQ(gpu.out, cpu.out);
  EXPECT_EQ(lines(gpu.out), 1u + 4 * 2);
}
