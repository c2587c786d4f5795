// sweep's default screen (issue 63): the answer first, then a table within 120 columns and a short
// legend; --format wide keeps every column.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

using mlaplan::test::has;
using mlaplan::test::lines_of;
using mlaplan::test::run_cli;

namespace {
const std::string kJourney = "sweep --gpu h100 --model deepseek-v3 --tp 8 --workload coding-agent --policy vllm,sglang,max "
                             "--recommend --objective time --batches 300 --no-progress";
}  // namespace

TEST(SweepScreen, TheAnswerComesFirstWithin120Columns) {
  const auto r = run_cli(kJourney);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_GT(lines.size(), 3u);
  // The GPU and its file (the path under the labels' column where the line would pass 120), then the
  // recommendation: no table or legend before the answer.
  EXPECT_EQ(lines[0].rfind("gpu       NVIDIA H100 80GB HBM3 (--gpu h100)", 0), 0u) << r.out;
  EXPECT_TRUE(has(r.out.substr(0, r.out.find("\n\n")), "costs/h100/deepseek-v3-tp8-bf16-fa3.json")) << r.out;
  EXPECT_EQ(r.out.find("\n\n") + 2, r.out.find("recommendation: ")) << r.out;
  EXPECT_LT(r.out.find("vLLM's default: 65536 rows"), r.out.find("\npolicy ")) << r.out;
  for (const std::string& line : lines) EXPECT_LE(line.size(), 120u) << line;
  // The table: what decides the buffer, memory as the operator counts it, buffers in K rows.
  const size_t header = r.out.find("\npolicy ");
  ASSERT_NE(header, std::string::npos);
  const std::string titles = lines_of(r.out.substr(header + 1)).front();
  for (const char* t : {"buffer", "p99 it", "refused", "mean ms", "p99 ms", "reserves", "KV tokens"}) EXPECT_TRUE(has(titles, t)) << titles;
  EXPECT_FALSE(has(titles, "q merges")) << titles;
  EXPECT_TRUE(has(r.out, "\nvllm (packed)           64K   -")) << r.out;
  EXPECT_TRUE(has(r.out, "968 MiB     14,444")) << r.out;  // 64K rows of DeepSeek-V3 TP 8 in KV-cache tokens
  // The buffers the recommendation passed over are the table's rows, not repeated under it.
  EXPECT_FALSE(has(r.out, "over the best")) << r.out;
  EXPECT_TRUE(has(r.out, "--format wide: every column.")) << r.out;
}

TEST(SweepScreen, WideKeepsEveryColumnAndTheWholeRecommendation) {
  const auto r = run_cli(kJourney + " --format wide");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* t : {"q merges", "K concat", "layer ms", "step p50", "per-iter", "over bound", "padding"})
    EXPECT_TRUE(has(r.out, t)) << t;
  EXPECT_TRUE(has(r.out, "over the best")) << r.out;  // each buffer passed over, and why
  EXPECT_LT(r.out.find("\npolicy "), r.out.find("recommendation: ")) << r.out;
}

TEST(SweepScreen, IterationsAloneFitToo) {
  const auto r = run_cli("sweep --workload short-chat --batches 200 --model deepseek-v3,kimi-k2 --tp 1,8 --policy all "
                         "--no-progress");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string& line : lines_of(r.out)) EXPECT_LE(line.size(), 120u) << line;
  EXPECT_TRUE(has(r.out, "kimi-k2 TP8")) << r.out;  // several models: a model column
}

// The sweep picture's memory axis (what each buffer reserves on a GPU) and the budget's line, with
// one model; several models have no one axis, so none.
TEST(SweepScreen, ThePictureDrawsTheMemoryAxisAndTheBudget) {
  const std::filesystem::path dir = mlaplan::test::scratch("sweep-memory");
  const std::string svg = (dir / "s.svg").string();
  const auto r = run_cli("sweep --workload short-chat --batches 200 --model deepseek-v3 --tp 8 --policy packed --recommend "
                         "--max-iterations 2 --memory-budget 1GiB --no-progress --svg " + svg);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string s = mlaplan::test::slurp(svg);
  EXPECT_NE(s.find("reserved per GPU, deepseek-v3 TP8"), std::string::npos);
  EXPECT_NE(s.find(">968 MiB<"), std::string::npos) << "64K rows of DeepSeek-V3 TP 8 reserve 968 MiB";
  EXPECT_NE(s.find("class=\"budget\""), std::string::npos);
  EXPECT_NE(s.find("memory budget 1.00 GiB"), std::string::npos);
  const auto two = run_cli("sweep --workload short-chat --batches 200 --model deepseek-v3,kimi-k2 --tp 8 --policy packed "
                           "--no-progress --svg " + svg);
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(mlaplan::test::slurp(svg).find("reserved per GPU"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// A cost file in a deep folder: its path, one word that no wrap can break, is shortened in the
// middle (the first folder and the file's name kept) in every default line that names it.
TEST(SweepScreen, ALongCostFilePathStaysWithin120Columns) {
  const std::filesystem::path dir = mlaplan::test::scratch("long-cost-path") / std::string(70, 'a') / std::string(60, 'b');
  std::filesystem::create_directories(dir);
  const std::filesystem::path cost = dir / "cost.json";
  std::filesystem::copy_file(MLAPLAN_SOURCE_DIR "/costs/h100/deepseek-v3-tp8-bf16-fa3.json", cost,
                             std::filesystem::copy_options::overwrite_existing);
  ASSERT_GT(cost.string().size(), 140u);
  for (const std::string& args : std::vector<std::string>{
           "sweep --workload short-chat --batches 100 --policy vllm --no-progress --recommend --objective time --gpu h100 --cost ",
           "run " + mlaplan::test::kScenarios + "/deepseek-v3-mixed.json --backend cpu --policy engines --gpu h100 --cost "}) {
    const auto r = run_cli(args + cost.string());
    ASSERT_EQ(r.code, 0) << r.err;
    for (const std::string& line : lines_of(r.out)) EXPECT_LE(line.size(), 120u) << line;
    EXPECT_TRUE(has(r.out, "/.../" + std::string(60, 'b') + "/cost.json")) << r.out;
  }
  std::filesystem::remove_all(mlaplan::test::scratch("long-cost-path"));
}
