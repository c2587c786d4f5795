// mlaplan bench end to end on any machine: the CPU kernels run, the GPU ones are reported
// unavailable (with the reason) when there is no GPU, every format parses, bad input exits 2.
#include <gtest/gtest.h>
#include <regex>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

using nlohmann::json;
using mlaplan::test::run_cli;

namespace {
const std::string kQuick = "bench --sizes 1,64 --max-time 0.01 --min-samples 3 ";
}

TEST(BenchCli, JsonHasARowPerSizeKernelAndModeForWhatRan) {
  const auto r = run_cli(kQuick + "--kernels cpu,cpu-fast --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["mlaplan_bench"], 1);
  ASSERT_EQ(j["rows"].size(), 2u * 2u * 2u);  // sizes x kernels x modes
  for (const json& row : j["rows"]) {
    EXPECT_GT(row["median_us"].get<double>(), 0);
    EXPECT_LE(row["min_us"].get<double>(), row["median_us"].get<double>());
    EXPECT_GE(row["max_us"].get<double>(), row["median_us"].get<double>());
    EXPECT_GE(row["samples"].get<int>(), 3);
    EXPECT_GT(row["gbps"].get<double>(), 0);
  }
}

TEST(BenchCli, WithoutAGpuTheGpuKernelsAreListedUnavailableAndItStillSucceeds) {
  const auto r = run_cli(kQuick + "--format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  if (j["device"] != "none") GTEST_SKIP() << "a GPU is usable here: " << j["device"];
  ASSERT_EQ(j["unavailable"].size(), 6u);  // max-port, fast, graph, cpu+copy, empty, copy
  for (const json& u : j["unavailable"]) EXPECT_FALSE(u["reason"].get<std::string>().empty());
  EXPECT_NE(r.err.find("mlaplan: note: max-port: unavailable: "), std::string::npos) << r.err;
  for (const json& row : j["rows"]) EXPECT_TRUE(row["kernel"] == "cpu" || row["kernel"] == "cpu-fast");
}

// The port of MAX's kernel is max-port; seed, its name before 2026-12-01, still selects it, and
// every output names it max-port (the random seed keeps its key).
TEST(BenchCli, SeedIsStillAcceptedForMaxPortAndPrintedAsMaxPort) {
  const auto r = run_cli(kQuick + "--kernels SEED,cpu-fast --mode hot --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["settings"]["kernels"], json::array({"max-port", "cpu-fast"}));
  EXPECT_EQ(j["settings"]["seed"], 1);
  for (const json& row : j["rows"]) {
    EXPECT_NE(row["kernel"], "seed");
    EXPECT_TRUE(row.contains("speedup_vs_max_port"));
  }
  if (j["device"] == "none") EXPECT_EQ(j["unavailable"][0]["kernel"], "max-port");
  EXPECT_EQ(r.err.find("seed"), std::string::npos) << r.err;
  const auto table = run_cli(kQuick + "--kernels seed,cpu-fast --mode hot");
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("vs max-port"), std::string::npos) << table.out;
  const auto help = run_cli("bench --help");
  EXPECT_NE(help.out.find("max-port (the GPU port of MAX's kernel)"), std::string::npos) << help.out;
  const auto bad = run_cli(kQuick + "--kernels seeds");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("choose from max-port, fast,"), std::string::npos) << bad.err;
}

TEST(BenchCli, EveryFormat) {
  const auto table = run_cli(kQuick + "--kernels cpu,cpu-fast --mode hot");
  ASSERT_EQ(table.code, 0) << table.err;
  // Columns widen to fit their values (a busy host's CI can read 9059.43%*), so match the names, not the spacing.
  EXPECT_TRUE(std::regex_search(table.out, std::regex(R"(median +CI 95% +samples)"))) << table.out;
  EXPECT_NE(table.out.find(" is fastest ("), std::string::npos) << table.out;  // the closing answer
  const auto md = run_cli(kQuick + "--kernels cpu-fast --mode hot --format md");
  ASSERT_EQ(md.code, 0);
  EXPECT_NE(md.out.find("| batch | kernel | mode |"), std::string::npos);
  const auto csv = run_cli(kQuick + "--kernels cpu-fast --mode cold --format csv");
  ASSERT_EQ(csv.code, 0);
  EXPECT_EQ(csv.out.rfind("batch_size,kernel,mode,median_us", 0), 0u);
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 3);  // header + 2 sizes
}

TEST(BenchCli, BadInputExitsTwoWithOneLineNamingTheOption) {
  for (const std::string& args : {std::string("--sizes 8:1:x2"), std::string("--kernels cpu,warp"), std::string("--distribution pareto"),
                                  std::string("--mode lukewarm"), std::string("--sizes 1000 --buffer-tokens 128 --max-chunks 2"),
                                  std::string("--fill 0")}) {
    const auto r = run_cli("bench " + args + (args.find("--kernels") == std::string::npos ? " --kernels cpu-fast" : ""));
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(r.err.rfind("mlaplan: error: ", 0), 0u) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_EQ(r.out, "");
  }
}
