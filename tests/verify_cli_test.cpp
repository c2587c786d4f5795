// `mlaplan verify` end to end: exit codes, summaries, reproducers, --plan, --report and --junit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

using nlohmann::json;
using mlaplan::test::run_cli;
using mlaplan::test::slurp;
namespace fs = std::filesystem;
using mlaplan::test::kScenarios;

namespace {

class VerifyCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mlaplan_verify_" + std::to_string(::getpid()) + "_" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir_ / name) << text; }

  fs::path dir_;
};

// The worked example's tables, as `run --format json` prints them.
json worked_plan() {
  const auto r = run_cli("run " + kScenarios + "/worked-example.json --backend cpu --format json");
  return json::parse(r.out);
}

}  // namespace

TEST_F(VerifyCli, BundledScenariosPass) {
  const auto r = run_cli("verify " + kScenarios + " --backend cpu --kernel all");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS  " + kScenarios + "/worked-example.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("26 passed, 0 failed"), std::string::npos) << r.out;  // 13 scenarios x 2 planners
}

// --kernel max-port was --kernel seed before 2026-12-01: the old name still checks the same planner,
// and neither the help nor the error for a wrong name offers it.
TEST_F(VerifyCli, KernelSeedIsAnAliasOfMaxPort) {
  const auto port = run_cli("verify " + kScenarios + " --backend cpu --kernel max-port");
  EXPECT_EQ(port.code, 0) << port.out << port.err;
  EXPECT_NE(port.out.find("13 passed, 0 failed"), std::string::npos) << port.out;
  const auto seed = run_cli("verify " + kScenarios + " --backend cpu --kernel seed");
  EXPECT_EQ(seed.code, 0) << seed.out << seed.err;
  EXPECT_NE(seed.out.find("13 passed, 0 failed"), std::string::npos) << seed.out;
  const auto help = run_cli("verify --help");
  EXPECT_NE(help.out.find("TEXT:{fast,max-port,all}"), std::string::npos) << help.out;
  const auto bad = run_cli("verify --kernel turbo");
  EXPECT_NE(bad.err.find("'turbo' is not one of fast, max-port or all"), std::string::npos) << bad.err;
}

TEST_F(VerifyCli, DefaultRunIsTheBuiltInSuiteWithAPrintedSeed) {
  const auto r = run_cli("verify --backend cpu --seed 5");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("built-in edge cases"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fuzz: 1000 random batches from --seed 5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" passed, 0 failed"), std::string::npos);
}

TEST_F(VerifyCli, AFailingScenarioExitsOneWithAReproducerAndReports) {
  write("wrong.json", R"({"name": "wrong", "page_size": 128, "buffer_token_size": 512, "max_chunks": 4,
    "cache_lengths": [500, 0, 100], "input_row_offsets": [0, 9, 209, 229],
    "expected": {"cache_offsets": [[0, 0, 0], [512, 0, 1], [512, 256, 128], [512, 256, 128]]}})");
  const auto r = run_cli("verify " + dir_.string() + " " + kScenarios + "/worked-example.json --backend cpu --kernel max-port" +
                         " --repro-dir " + path("repro") + " --report " + path("report.json") + " --junit " +
                         path("junit.xml"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("expected: chunk 1, sequence 2: cache_offsets expected 1, got 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 passed, 1 failed"), std::string::npos) << r.out;
  // The reproducer is a scenario that run and verify accept, and it still fails.
  const std::string repro = path("repro/wrong-repro.json");
  ASSERT_TRUE(fs::exists(repro)) << r.out;
  EXPECT_EQ(run_cli("run " + repro + " --backend cpu --format json").code, 1);
  EXPECT_EQ(run_cli("verify " + repro + " --backend cpu --repro-dir " + path("repro2")).code, 1);
  // The JSON report lists every case.
  const json report = json::parse(slurp(path("report.json")));
  EXPECT_EQ(report["passed"], 1);
  EXPECT_EQ(report["failed"], 1);
  ASSERT_EQ(report["cases"].size(), 2u);
  // The JUnit file parses as XML with the right counts.
  if (std::system("python3 -c 'import xml.etree.ElementTree' 2>/dev/null") != 0) GTEST_SKIP() << "python3 is missing";
  const std::string check = "python3 -c \"import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
                            "c = r.findall('.//testcase'); f = r.findall('.//testcase/failure'); "
                            "sys.exit(0 if (r.get('tests'), r.get('failures'), len(c), len(f)) == ('2', '1', 2, 1) else 1)\" " +
                            path("junit.xml");
  EXPECT_EQ(std::system(check.c_str()), 0) << slurp(path("junit.xml"));
}

TEST_F(VerifyCli, PlanFromElsewherePassesWhenRightAndNamesTheCellWhenWrong) {
  json plan = worked_plan();
  write("good.json", plan.dump());
  const auto good = run_cli("verify --plan " + path("good.json") + " " + kScenarios + "/worked-example.json");
  EXPECT_EQ(good.code, 0) << good.out << good.err;

  plan["buffer_row_offsets"][1][2] = 255;
  write("bad.json", plan.dump());
  const auto bad = run_cli("verify --plan " + path("bad.json") + " " + kScenarios + "/worked-example.json");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("chunk 1, sequence 2: buffer_row_offsets expected 256, got 255 (differing cells: "
                         "buffer_row_offsets 1, cache_offsets 0, buffer_lengths 0)"),
            std::string::npos)
      << bad.out;

  json short_plan = worked_plan();
  short_plan["buffer_lengths"] = json::array({512, 384, -1});
  write("short.json", short_plan.dump());
  EXPECT_EQ(run_cli("verify --plan " + path("short.json") + " " + kScenarios + "/worked-example.json").code, 1);

  json negative = worked_plan();
  negative["cache_offsets"][0][0] = -1;
  write("negative.json", negative.dump());
  const auto neg = run_cli("verify --plan " + path("negative.json") + " " + kScenarios + "/worked-example.json");
  EXPECT_EQ(neg.code, 1);
  EXPECT_NE(neg.out.find("chunk 0, sequence 0: cache_offsets holds -1"), std::string::npos) << neg.out;
}

TEST_F(VerifyCli, PlanForAnInfeasibleScenarioMustBeARefusal) {
  write("refused.json", R"({"infeasible": true})");
  EXPECT_EQ(run_cli("verify --plan " + path("refused.json") + " " + kScenarios + "/infeasible-too-long.json").code, 0);
  EXPECT_EQ(run_cli("verify --plan " + path("refused.json") + " " + kScenarios + "/worked-example.json").code, 1);
  write("tables.json", R"({"buffer_row_offsets": [[0, 512, 512, 512], [0, 0, 256, 512]],
                           "cache_offsets": [[0, 0, 0], [512, 0, 0]], "buffer_lengths": [512, 512]})");
  const auto r = run_cli("verify --plan " + path("tables.json") + " " + kScenarios + "/infeasible-too-long.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("infeasible batch"), std::string::npos) << r.out;
}

TEST_F(VerifyCli, BadInputExitsTwo) {
  write("notjson.json", "{");
  for (const std::string& args :
       std::vector<std::string>{"verify --plan " + path("notjson.json") + " " + kScenarios + "/worked-example.json",
                                "verify --plan " + path("notjson.json"), "verify " + path("missing"),
                                "verify " + path("notjson.json"), "verify --kernel turbo", "verify --fuzz -3"}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out << r.err;
    EXPECT_EQ(r.err.rfind("mlaplan: error: ", 0), 0u) << args << ": " << r.err;
  }
}
