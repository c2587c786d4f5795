// --gpu end to end (issue 62): the answer's first line names the GPU and the file --gpu took for the
// model, TP and stack, from any folder; without --gpu the answer itself (run's time line, sweep's
// recommendation) names the file's GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "cli_runner.hpp"

namespace mlaplan {
namespace {

using test::has;
using test::run_cli;

const std::string kCosts = MLAPLAN_SOURCE_DIR "/costs/h200/";
const std::string kSmall = "sweep --workload coding-agent --batches 50 --buffer-tokens 8192,65536 --policy packed ";

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

TEST(GpuCli, TheFirstLineNamesTheGpuAndTheFileTaken) {
  struct Case {
    std::string args, file;
  };
  for (const Case& c : {Case{"--gpu h200 --model deepseek-v3 --tp 8", "deepseek-v3-tp8-bf16-fa3.json"},
                        Case{"--gpu 'NVIDIA H200' --model deepseek-v3 --tp 8 --attention fa2", "deepseek-v3-tp8-bf16.json"},
                        Case{"--gpu H200 --model deepseek-v3 --tp 1", "deepseek-v3-tp1-bf16-fa3.json"},
                        Case{"--gpu h200 --model kimi-k2 --tp 8 --attention flash", "kimi-k2-tp8-bf16.json"}}) {
    // From another folder: the files are found relative to the executable, not the working folder.
    const test::CliResult r = run_cli(kSmall + c.args, "cd / &&");
    ASSERT_EQ(r.code, 0) << c.args << "\n" << r.err;
    const std::string line = first_line(r.out);
    EXPECT_EQ(line.rfind("gpu       NVIDIA H200 (--gpu ", 0), 0u) << line;
    // The file on the next line, under the labels' column (a long path stays within 120 columns).
    EXPECT_TRUE(has(r.out, " priced by\n          " + kCosts + c.file + "\n")) << c.args << ": " << r.out;
  }
  const test::CliResult run = run_cli("run " + test::kScenarios + "/deepseek-v3-mixed.json --backend cpu --gpu h200 --model deepseek-v3 --tp 8");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out.rfind("gpu       NVIDIA H200 (--gpu h200): deepseek-v3 TP 8 priced by\n          " + kCosts +
                              "deepseek-v3-tp8-bf16-fa3.json\n",
                          0),
            0u)
      << run.out;
}

TEST(GpuCli, WithoutGpuTheAnswerNamesTheFilesGpu) {
  const test::CliResult run = run_cli("run " + test::kScenarios + "/deepseek-v3-mixed.json --backend cpu --cost " + kCosts +
                                      "deepseek-v3-tp8-bf16-fa3.json");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(has(run.out, "ms/step predicted on NVIDIA H200 (")) << run.out;
  EXPECT_FALSE(has(run.out, "gpu       ")) << "a header line without --gpu";
  const test::CliResult rec = run_cli(kSmall + "--cost " + kCosts + "deepseek-v3-tp8-bf16-fa3.json --recommend --objective time");
  ASSERT_EQ(rec.code, 0) << rec.err;
  EXPECT_TRUE(has(rec.out, "recommendation: the smallest buffer whose p99 step time, priced for NVIDIA H200, is within 5%"))
      << rec.out;
}

// A file that missed its own held-out targets (the H100 DeepSeek-V3 TP 1 file of 1d3e663, shipped until the
// small-GEMM term) says so under its path where --gpu takes it (from an install's folder), and in one warning
// with --cost; a file that passed says nothing.
TEST(GpuCli, AFileThatMissedItsHeldOutCheckSaysSo) {
  const std::string missed = MLAPLAN_SOURCE_DIR "/docs/data/cost-validation/h100-2026-12-06/deepseek-v3-tp1-fa3-1d3e663-miss.json";
  const std::filesystem::path root = test::install_prefix("heldout_missed");
  std::filesystem::copy_file(missed, test::costs_dir(root, "h100") / "deepseek-v3-tp1-bf16-fa3.json");
  const test::CliResult gpu = test::run_installed(root, kSmall + "--gpu h100 --model deepseek-v3 --tp 1");
  ASSERT_EQ(gpu.code, 0) << gpu.err;
  EXPECT_TRUE(has(gpu.out, "deepseek-v3-tp1-bf16-fa3.json\n          its held-out check missed the targets on coding-agent "
                           "(median 2.2% > 2%;"))
      << gpu.out;
  EXPECT_EQ(gpu.err, "");
  std::filesystem::remove_all(root);
  const test::CliResult cost = run_cli(kSmall + "--cost " + missed + " --format json");
  ASSERT_EQ(cost.code, 0) << cost.err;
  EXPECT_EQ(cost.err.rfind("mlaplan: warning: " + missed + ": its held-out check missed the targets on coding-agent (", 0), 0u)
      << cost.err;
  EXPECT_EQ(std::count(cost.err.begin(), cost.err.end(), '\n'), 1);
  EXPECT_TRUE(has(cost.out, "\"heldout_missed\": [\n        \"coding-agent (median 2.2% > 2%")) << cost.out;
  const test::CliResult passed = run_cli(kSmall + "--gpu h100 --model deepseek-v3 --tp 8");
  ASSERT_EQ(passed.code, 0) << passed.err;
  EXPECT_FALSE(has(passed.out, "held-out")) << passed.out;
  EXPECT_EQ(passed.err, "");
}

}  // namespace
}  // namespace mlaplan
