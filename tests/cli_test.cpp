// The mlaplan executable end to end: exit codes, stdout holding only the output, one-line errors,
// output files, and every bundled scenario against its expected block.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_runner.hpp"

using nlohmann::json;
using mlaplan::test::run_cli;
namespace fs = std::filesystem;
using mlaplan::test::kScenarios;
using mlaplan::test::lines;

TEST(Cli, RunJsonPrintsTheContractAndNothingElse) {
  const auto r = run_cli("run " + kScenarios + "/worked-example.json --backend cpu --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const json j = json::parse(r.out);  // throws if anything but the JSON is on stdout
  for (const char* key : {"scenario", "backend", "device", "batch_size", "page_size", "buffer_token_size", "max_chunks",
                          "chunks_used", "padded_tokens", "buffer_row_offsets", "cache_offsets", "buffer_lengths",
                          "verification", "timings_us"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["scenario"], "worked-example");
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_TRUE(j["device"].is_null());
  EXPECT_EQ(j["chunks_used"], 2);
  EXPECT_EQ(j["padded_tokens"], 896);
  EXPECT_EQ(j["buffer_row_offsets"], json::parse("[[0, 512, 512, 512], [0, 0, 256, 384], [0, 0, 0, 0], [0, 0, 0, 0]]"));
  EXPECT_EQ(j["cache_offsets"], json::parse("[[0, 0, 0], [512, 0, 0], [512, 256, 128], [512, 256, 128]]"));
  EXPECT_EQ(j["buffer_lengths"], json::parse("[512, 384, -1, -1]"));
  EXPECT_EQ(j["verification"]["status"], "pass");
  EXPECT_TRUE(j["timings_us"].contains("plan"));
}

TEST(Cli, EveryBundledScenarioMatchesItsExpectedBlock) {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(kScenarios)) {
    if (entry.path().extension() != ".json") continue;
    const json scenario = json::parse(std::ifstream(entry.path()));
    ASSERT_TRUE(scenario.contains("expected")) << entry.path();
    const auto r = run_cli("run " + entry.path().string() + " --backend cpu --format json");
    if (scenario["expected"].value("infeasible", false)) {
      // The refusal the scenario expects is the right answer: shown as one, exit 0, with a note.
      EXPECT_EQ(r.code, 0) << entry.path() << r.err;
      const json j = json::parse(r.out);
      EXPECT_EQ(j["refused"].get<std::string>().rfind("max_chunks: infeasible batch: ", 0), 0u) << j;
      EXPECT_FALSE(j.contains("buffer_row_offsets"));
      EXPECT_EQ(r.err.find("mlaplan: note: " + entry.path().string() + ": refused, as the scenario's expected block says"),
                0u) << r.err;
      EXPECT_EQ(lines(r.err), 1u) << r.err;
    } else {
      ASSERT_EQ(r.code, 0) << entry.path() << r.err;
      const json j = json::parse(r.out);
      EXPECT_EQ(j["verification"]["expected"], "pass") << entry.path();
      EXPECT_EQ(j["buffer_row_offsets"], scenario["expected"]["buffer_row_offsets"]) << entry.path();
      EXPECT_EQ(j["cache_offsets"], scenario["expected"]["cache_offsets"]) << entry.path();
      EXPECT_EQ(j["buffer_lengths"], scenario["expected"]["buffer_lengths"]) << entry.path();
    }
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(Cli, TableAndCsvFormats) {
  const auto t = run_cli("run " + kScenarios + "/worked-example.json --backend cpu");
  ASSERT_EQ(t.code, 0);
  // The right-hand range is of the sequence's padded tokens (cache + new + page padding), not its cache.
  EXPECT_NE(t.out.find("chunk    rows    fill  sequences: s<b> [buffer rows) <- [padded tokens)\n"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("s1 [0, 256) <- [0, 256)  s2 [256, 384) <- [0, 128)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("2 of 4 chunks used | 896 padded tokens"), std::string::npos) << t.out;
  const auto c = run_cli("run " + kScenarios + "/worked-example.json --backend cpu --format csv");
  ASSERT_EQ(c.code, 0);
  EXPECT_EQ(c.out.substr(0, c.out.find('\n')), "chunk,sequence,buffer_row_offset,cache_offset,buffer_length");
  EXPECT_EQ(lines(c.out), 1u + 4 * 4);  // header + M x (B + 1)
  EXPECT_NE(c.out.find("\n1,2,256,0,384\n"), std::string::npos) << c.out;
}

TEST(Cli, OutputFileIsWrittenAndNotLeftBehindOnError) {
  const fs::path dir = fs::temp_directory_path() / ("mlaplan_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto ok = run_cli("run " + kScenarios + "/worked-example.json --backend cpu --format json -o " +
                          (dir / "plan.json").string());
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.out, "");
  EXPECT_EQ(json::parse(std::ifstream(dir / "plan.json"))["padded_tokens"], 896);
  // An infeasible batch whose scenario expects no refusal (one that does is the right answer, exit 0).
  std::ofstream(dir / "inf.json") << R"({"page_size": 1, "buffer_token_size": 1, "max_chunks": 1, "cache_lengths": [0, 0],
                                         "input_row_offsets": [0, 1, 1]})";
  const auto bad = run_cli("run " + (dir / "inf.json").string() + " --backend cpu -o " + (dir / "x.json").string());
  EXPECT_EQ(bad.code, 2);
  fs::remove(dir / "inf.json");
  EXPECT_FALSE(fs::exists(dir / "x.json"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // no temporary left
  fs::remove_all(dir);
}

TEST(Cli, BadInputExitsTwoWithOneErrorLine) {
  const fs::path f = fs::temp_directory_path() / ("mlaplan_bad_" + std::to_string(::getpid()) + ".json");
  std::ofstream(f) << R"({"page_size": 128, "buffer_token_size": 512, "max_chunks": 4, "cache_lengths": [1, 2, 3, -1],
                         "input_lengths": [1, 1, 1, 1]})";
  const std::vector<std::string> commands = {"run " + f.string(), "run " + f.string() + " --format json",
                                             "run /nonexistent.json", "run", "run " + f.string() + " --format yaml",
                                             "frobnicate", ""};
  for (const std::string& args : commands) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(r.err.rfind("mlaplan: error: ", 0), 0u) << args << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1u) << args << ": " << r.err;
  }
  const auto r = run_cli("run " + f.string());
  EXPECT_NE(r.err.find(f.string() + ": cache_lengths[3]: expected a non-negative integer below 2^32, got -1"),
            std::string::npos)
      << r.err;
  fs::remove(f);
}

TEST(Cli, AWrongExpectedBlockExitsOne) {
  const fs::path f = fs::temp_directory_path() / ("mlaplan_wrong_" + std::to_string(::getpid()) + ".json");
  std::ofstream(f) << R"({"page_size": 128, "buffer_token_size": 512, "max_chunks": 4, "cache_lengths": [500, 0, 100],
                         "input_row_offsets": [0, 9, 209, 229], "expected": {"buffer_lengths": [512, 383, -1, -1]}})";
  const auto r = run_cli("run " + f.string() + " --backend cpu --format json");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(json::parse(r.out)["verification"]["status"], "fail");
  EXPECT_NE(r.err.find("chunk 1: buffer_lengths expected 383, got 384"), std::string::npos) << r.err;
  fs::remove(f);
}

TEST(Cli, GpuBackendWithoutAGpuExitsThree) {
  const auto probe = run_cli("run " + kScenarios + "/worked-example.json --backend gpu --format json");
  if (probe.code == 0) GTEST_SKIP() << "a GPU is usable here; this test needs a machine without one";
  EXPECT_EQ(probe.code, 3);
  EXPECT_EQ(probe.out, "");
  EXPECT_EQ(probe.err.rfind("mlaplan: error: no usable GPU", 0), 0u) << probe.err;
  const auto fallback = run_cli("run " + kScenarios + "/worked-example.json --format json");
  EXPECT_EQ(fallback.code, 0);
  EXPECT_EQ(json::parse(fallback.out)["backend"], "cpu");
  EXPECT_NE(fallback.err.find("planning on the CPU"), std::string::npos) << fallback.err;
}

TEST(Cli, VersionSaysWhetherCudaIsBuiltIn) {
  const auto r = run_cli("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("mlaplan ", 0), 0u);
  EXPECT_TRUE(r.out.find("CUDA") != std::string::npos) << r.out;
}

// run priced by mlaplan's fused loop (a cost file whose kernels.up_projection is "fused"): the memory line
// says its buffer is K and V alone and why there is no K concat or latent, within 120 columns; the
// engines' line and the JSON's fields are as before. The picture's detail line says the same.
TEST(Cli, RunUnderTheFusedLoopSaysItsBufferIsKAndV) {
  const fs::path dir = mlaplan::test::scratch("run_fused");
  json cost = json::parse(std::ifstream(MLAPLAN_SOURCE_DIR "/costs/h100/deepseek-v3-tp8-bf16-fa3.json"));
  cost["kernels"]["up_projection"] = "fused";
  std::ofstream(dir / "fused.json") << cost.dump(1);
  const std::string run = "run " + kScenarios + "/worked-example.json --backend cpu --model deepseek-v3 --tp 8 --cost ";
  const auto f = run_cli(run + (dir / "fused.json").string() + " --svg " + (dir / "plan.svg").string());
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_NE(f.out.find("\nmemory    deepseek-v3 TP 8 bf16: buffer 512 rows x 10.0 KiB (K + V) = 5.00 MiB\n"
                       "          mlaplan's fused loop: it gathers no latent and builds no K concat\n"),
            std::string::npos)
      << f.out;
  EXPECT_EQ(f.out.find("K concat 0 B"), std::string::npos) << f.out;
  for (const std::string& l : mlaplan::test::lines_of(f.out)) EXPECT_LE(l.size(), 120u) << l;
  EXPECT_NE(mlaplan::test::slurp(dir / "plan.svg").find("5.00 MiB (K + V, mlaplan&#39;s fused loop)"), std::string::npos);
  const auto e = run_cli(run + MLAPLAN_SOURCE_DIR "/costs/h100/deepseek-v3-tp8-bf16-fa3.json");
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("\nmemory    deepseek-v3 TP 8 bf16: buffer 512 rows x 8.00 KiB = 4.00 MiB, K concat 3.00 MiB, latent "
                       "576 KiB\n"),
            std::string::npos)
      << e.out;
  const auto j = run_cli(run + (dir / "fused.json").string() + " --format json");
  ASSERT_EQ(j.code, 0) << j.err;
  const json m = json::parse(j.out)["buffer_memory"];
  EXPECT_EQ(m, json::parse(R"({"model": "deepseek-v3", "tp": 8, "dtype": "bf16", "bytes_per_row": 10240,
                               "buffer_bytes": 5242880, "k_concat_bytes": 0, "latent_bytes": 0})"));
  fs::remove_all(dir);
}
