// The dispatch on the command line: a cost file's compute_capability refused in one line (exit 2),
// `run --cost` saying which path ran, and `sweep --cost` rows priced on TensorRT-LLM's whole-context
// path on an H200 and on its loop on a B200.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_runner.hpp"

// The file's own namespace, in a unity build too.
namespace dispatch_cli_test {

using mlaplan::test::CliResult;
using mlaplan::test::expect_bad_input;
using mlaplan::test::has;
using mlaplan::test::kData;
using mlaplan::test::kScenarios;
using mlaplan::test::run_cli;
using mlaplan::test::scratch;
using mlaplan::test::slurp;
using mlaplan::test::write;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const std::string kExample = kData + "/cost/deepseek-v3-tp8-example.json";
const std::string kMixed = kScenarios + "/deepseek-v3-mixed.json";

// The example cost file with its "gpu" line replaced by `gpu` (a JSON fragment), written to `dir`.
fs::path cost_file(const fs::path& dir, const std::string& name, const std::string& gpu) {
  std::string text = slurp(kExample);
  const std::string from = "\"gpu\": \"NVIDIA H200\",";
  text.replace(text.find(from), from.size(), gpu);
  write(dir / name, text);
  return dir / name;
}

}  // namespace

TEST(DispatchCli, AnUnknownGpuWithoutACapabilityIsOneLine) {
  const fs::path d = scratch("dispatch_unknown_gpu");
  const fs::path synthetic = cost_file(d, "synthetic.json", "\"gpu\": \"Synthetic GPU\",");
  const std::string message = synthetic.string() +
                              ": compute_capability: missing, and \"Synthetic GPU\" is not a GPU mlaplan knows; add "
                              "\"compute_capability\": \"9.0\" (the GPU's)";
  expect_bad_input("run " + kMixed + " --backend cpu --cost " + synthetic.string(), message);
  expect_bad_input("sweep --workload short-chat --batches 5 --no-progress --cost " + synthetic.string(), message);
  const fs::path bad = cost_file(d, "bad.json", "\"gpu\": \"NVIDIA H200\", \"compute_capability\": \"nine\",");
  expect_bad_input("run " + kMixed + " --backend cpu --cost " + bad.string(),
                   bad.string() + ": compute_capability: \"nine\" is not a compute capability");
  // Given, the GPU's name does not matter.
  const fs::path given = cost_file(d, "given.json", "\"gpu\": \"Synthetic GPU\", \"compute_capability\": \"9.0\",");
  const CliResult ok = run_cli("run " + kMixed + " --backend cpu --policy packed/trtllm --cost " + given.string());
  EXPECT_EQ(ok.code, 0) << ok.err;
  fs::remove_all(d);
}

TEST(DispatchCli, RunSaysWhichPathRan) {
  const fs::path d = scratch("dispatch_run");
  const CliResult table = run_cli("run " + kMixed + " --backend cpu --policy packed/trtllm --cost " + kExample);
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_TRUE(has(table.out, "path      one-shot: TensorRT-LLM runs the whole context at once on SM90")) << table.out;
  const json h200 = json::parse(run_cli("run " + kMixed + " --backend cpu --policy packed/trtllm --format json --cost " +
                                        kExample).out);
  EXPECT_EQ(h200["predicted_time"]["path"], "one-shot");
  EXPECT_EQ(h200["predicted_time"]["iterations"], 0);
  EXPECT_DOUBLE_EQ(h200["predicted_time"]["over_lower_bound"].get<double>(), 0);
  EXPECT_GT(h200["chunks_used"].get<int>(), 0);  // the plan shown is still the policy's

  const fs::path b200 = cost_file(d, "b200.json", "\"gpu\": \"NVIDIA B200\",");
  const json looped = json::parse(run_cli("run " + kMixed + " --backend cpu --policy packed/trtllm --format json --cost " +
                                          b200.string()).out);
  EXPECT_EQ(looped["predicted_time"]["path"], "chunked");
  EXPECT_EQ(looped["predicted_time"]["iterations"], looped["chunks_used"]);
  EXPECT_TRUE(has(looped["predicted_time"]["path_reason"].get<std::string>(), "chunk loop on SM100"));

  // Several policies: the comparison names each one's path.
  const CliResult all = run_cli("run " + kMixed + " --backend cpu --policy variants --cost " + kExample);
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_TRUE(has(all.out, "path\n")) << all.out;
  EXPECT_TRUE(has(all.out, "one-shot\n")) << all.out;
  fs::remove_all(d);
}

TEST(DispatchCli, SweepPricesTensorRtLlmOnItsPath) {
  const fs::path d = scratch("dispatch_sweep");
  const std::string sweep = "sweep --workload coding-agent --batches 200 --no-progress --policy packed/trtllm,packed "
                            "--buffer-tokens 8192,65536 --model deepseek-v3 --tp 8 --format json --cost ";
  const CliResult r = run_cli(sweep + kExample);
  ASSERT_EQ(r.code, 0) << r.err;
  const json h200 = json::parse(r.out);
  EXPECT_EQ(h200["costs"][0]["compute_capability"], "9.0");
  for (const json& row : h200["rows"]) {
    if (row["policy"] == "packed") {
      EXPECT_EQ(row["path"], "chunked");
      EXPECT_EQ(row["memory_rows"], row["buffer_tokens"]);
      continue;
    }
    EXPECT_EQ(row["path"], "one-shot");
    EXPECT_EQ(row["paths"]["one_shot"], 200);
    EXPECT_EQ(row["dispatched_mean_iterations"], 0);
    EXPECT_DOUBLE_EQ(row["over_lower_bound"].get<double>(), 0);
    EXPECT_EQ(row["memory_rows"], row["most_rows"]);  // the largest batch's whole context
    EXPECT_GT(row["memory_bytes"].get<uint64_t>(), 0u);
  }
  EXPECT_EQ(h200["rows"][0]["memory_rows"], h200["rows"][1]["memory_rows"]);  // whatever the buffer

  const fs::path b200 = cost_file(d, "b200.json", "\"gpu\": \"NVIDIA B200\",");
  const json looped = json::parse(run_cli(sweep + b200.string()).out);
  for (const json& row : looped["rows"]) {
    EXPECT_EQ(row["path"], "chunked");
    EXPECT_EQ(row["dispatched_mean_iterations"], row["iterations"]["mean"]);
    EXPECT_EQ(row["memory_rows"], row["buffer_tokens"]);
  }

  const CliResult rec = run_cli("sweep --workload coding-agent --batches 200 --no-progress --policy packed/trtllm "
                                "--buffer-tokens 8192,65536 --model deepseek-v3 --tp 8 --recommend --objective time --cost " +
                                kExample);
  ASSERT_EQ(rec.code, 0) << rec.err;
  EXPECT_TRUE(has(rec.out, "packed/trtllm deepseek-v3 TP8: no buffer to size: TensorRT-LLM runs the whole context at once "
                           "on SM90"))
      << rec.out;
  fs::remove_all(d);
}

}  // namespace dispatch_cli_test
