// The engines through the executable: --policy engines on the cost file's GPU, --model's context as
// --max-model-len with the requests it dropped, each engine's default beside the choice, and the
// option's refusals.
#include <gtest/gtest.h>

#include <string>

#include "cli_runner.hpp"

namespace {

using mlaplan::test::has;
using mlaplan::test::kData;
using mlaplan::test::run_cli;

const std::string kExample = kData + "/cost/deepseek-v3-tp8-example.json";

TEST(EnginesCli, ModelContextDropsRequestsAndSaysSo) {
  const auto r = run_cli("sweep --workload coding-agent --model deepseek-v3 --tp 8 --policy vllm --batches 200 "
                         "--buffer-tokens 65536 --no-progress");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "requests over max_model_len 163840 dropped (max_model_len 163840 is DeepSeek-V3's context"))
      << r.out;
  // --max-model-len given: it is the user's, and no preset note.
  const auto given = run_cli("sweep --workload coding-agent --model deepseek-v3 --tp 8 --policy vllm --batches 200 "
                             "--buffer-tokens 65536 --max-model-len 1000000 --no-progress");
  ASSERT_EQ(given.code, 0) << given.err;
  EXPECT_TRUE(has(given.out, "over max_model_len 1000000 dropped")) << given.out;
  EXPECT_FALSE(has(given.out, "DeepSeek-V3's context")) << given.out;
}

TEST(EnginesCli, EnginesOnTheCostFilesGpuWithTheirDefaults) {
  const auto r = run_cli("sweep --workload coding-agent --policy engines --cost " + kExample +
                         " --batches 300 --buffer-tokens 4096:65536:x4 --recommend --objective time --no-progress");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "trtllm (one shot)")) << r.out;  // the example file is an H200's: SM90
  EXPECT_TRUE(has(r.out, "vllm (packed)")) << r.out;
  EXPECT_TRUE(has(r.out, "sglang (even split)")) << r.out;
  EXPECT_TRUE(has(r.out, "SGLang's default: 131072 rows")) << r.out;  // added to the grid to price it
  EXPECT_TRUE(has(r.out, "its knob: the environment variable SGLANG_MAX_KV_CHUNK_CAPACITY")) << r.out;
  EXPECT_TRUE(has(r.out, "TensorRT-LLM's default: no buffer")) << r.out;
  EXPECT_TRUE(has(r.out, "MAX's default: 16384 rows")) << r.out;
  EXPECT_TRUE(has(r.out, "KV-cache tokens")) << r.out;
  EXPECT_FALSE(has(r.out, "never")) << r.out;
}

TEST(EnginesCli, Refusals) {
  mlaplan::test::expect_bad_input("sweep --workload short-chat --policy vllm/x --batches 10", "an engine's name takes no variant");
  mlaplan::test::expect_bad_input("sweep --workload short-chat --policy vllm --packed trtllm --batches 10", "--packed");
  mlaplan::test::expect_bad_input("sweep --workload short-chat --policy vllm --max-num-seqs 0 --batches 10",
                                  "--max-sequences");
}

}  // namespace
