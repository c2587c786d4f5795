// `verify --external CMD`: another implementation checked through the line protocol of
// docs/external.md, with scripts/external/seed_port.py (a Python port of the seed) as the planner:
// as it is, it passes; with a planted bug, verify names the first differing cell and shrinks a
// reproducer; a planner that dies, answers nonsense or hangs is a device failure naming the batch.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

using nlohmann::json;
using mlaplan::test::run_cli;
using mlaplan::test::slurp;
namespace fs = std::filesystem;
using mlaplan::test::kScenarios;

namespace {

const std::string kPort = "'python3 " MLAPLAN_SOURCE_DIR "/scripts/external/seed_port.py";

class ExternalCli : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("mlaplan_external_" + std::to_string(::getpid()) + "_" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

}  // namespace

TEST_F(ExternalCli, APortOfTheSeedPasses) {
  const auto r = run_cli("verify --external " + kPort + "' --fuzz 400 --seed 11 " + kScenarios + " --report " +
                         (dir_ / "report.json").string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("external planner 'python3 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("413 passed, 0 failed"), std::string::npos) << r.out;  // 13 scenarios + 400 batches
  const json report = json::parse(slurp(dir_ / "report.json"));
  EXPECT_EQ(report["backend"], "external");
}

TEST_F(ExternalCli, AnOffByOneIsNamedAtItsFirstCellAndShrunk) {
  const auto r = run_cli("verify --external " + kPort + " --bug off-by-one' --fuzz 200 --seed 5 --max-reproducers 1 "
                         "--repro-dir " + dir_.string());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  // The first failure names its first differing cell, its batch and the shrunk reproducer.
  const size_t fail = r.out.find("  FAIL fuzz-5-");
  ASSERT_NE(fail, std::string::npos) << r.out;
  const std::string line = r.out.substr(fail, r.out.find('\n', fail) - fail);
  EXPECT_NE(line.find("[external]"), std::string::npos) << line;
  EXPECT_TRUE(line.find(": chunk ") != std::string::npos || line.find("infeasible") != std::string::npos) << line;
  size_t reproducers = 0;
  for (const auto& f : fs::directory_iterator(dir_)) {
    if (f.path().string().find("-repro.json") == std::string::npos) continue;
    ++reproducers;
    const json repro = json::parse(slurp(f.path()));
    EXPECT_LE(repro["cache_lengths"].size(), 4u) << repro.dump();  // shrunk to a handful of sequences
    EXPECT_NE(repro["description"].get<std::string>().find("Fails on external"), std::string::npos);
    // The reproducer still catches the bug, and the port without it passes it.
    // Run again, it shrinks no further: it is its own reproducer, and no x-repro-repro.json is written.
    const auto again = run_cli("verify --external " + kPort + " --bug off-by-one' " + f.path().string() + " --repro-dir " +
                               dir_.string());
    EXPECT_EQ(again.code, 1);
    EXPECT_NE(again.out.find("reproducer: " + f.path().string() + " (itself: nothing smaller fails)"), std::string::npos)
        << again.out;
    EXPECT_EQ(run_cli("verify --external " + kPort + "' " + f.path().string()).code, 0);
  }
  EXPECT_EQ(reproducers, 1u);
  for (const auto& f : fs::directory_iterator(dir_)) EXPECT_EQ(f.path().string().find("-repro-repro"), std::string::npos);
}

TEST_F(ExternalCli, APlanPastMaxChunksIsCaught) {
  const auto r = run_cli("verify --external " + kPort + " --bug no-refusal' " + kScenarios + "/infeasible-too-long.json "
                         "--repro-dir " + dir_.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("the planner produced a plan for an infeasible batch (it needs max_chunks >= 3, has 2)"),
            std::string::npos)
      << r.out;
}

TEST_F(ExternalCli, APlannerThatFailsIsADeviceFailureNamingTheBatch) {
  const std::string we = " " + kScenarios + "/worked-example.json";
  auto r = run_cli("verify --external 'exit 4'" + we);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("external planner 'exit 4' exited with status 4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("given B=3 page_size=128 buffer_token_size=512 max_chunks=4"), std::string::npos) << r.err;
  r = run_cli("verify --external 'while read l; do echo tables 1 2; done'" + we);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("tables holds 2 numbers; 32 (M x (B+1) + M x B + M) expected"), std::string::npos) << r.err;
  r = run_cli("verify --external 'while read l; do echo error out of cheese; done'" + we);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("external planner: error: out of cheese"), std::string::npos) << r.err;
  r = run_cli("verify --external 'sleep 5' --external-timeout 0.3" + we);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("did not answer within 0.3 s"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(ExternalCli, ATimeoutMustBePositive) {
  const auto r = run_cli("verify --external true --external-timeout 0 " + kScenarios + "/worked-example.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("mlaplan: error: --external-timeout: 0 is out of range; give a number of seconds from 0.001 to 86400"), std::string::npos) << r.err;
}

TEST_F(ExternalCli, ExternalAndPlanAreOneOrTheOther) {
  const auto r = run_cli("verify --external true --plan x.json " + kScenarios + "/worked-example.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--external: checks a planner by running it; --plan checks tables already made"), std::string::npos)
      << r.err;
}

// A planner built for fixed page sizes and max_chunks (MAX's kernel, here the port told to refuse
// everything else with `error`): --only-page-sizes and --only-max-chunks keep verify to them.
TEST_F(ExternalCli, OnlyTheAdmittedPageSizesAndMaxChunksAreSent) {
  const std::string fixed = kPort + " --page-sizes 16,128 --max-chunks 1,2,4,16'";
  const std::string only = " --only-page-sizes 128,16 --only-max-chunks 1,2,4,16";
  // Without the limits the port meets a batch it was not built for: exit 3, naming it.
  const auto unrestricted = run_cli("verify --external " + fixed + " --fuzz 300 --seed 5");
  EXPECT_EQ(unrestricted.code, 3) << unrestricted.out << unrestricted.err;
  EXPECT_NE(unrestricted.err.find("not built for page_size="), std::string::npos) << unrestricted.err;
  // With them, 2,000 batches and the scenarios inside them pass; the others are skipped and counted.
  const auto r = run_cli("verify --external " + fixed + " --fuzz 2000 --seed 5" + only + " " + kScenarios);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("only page_size in {16,128} and max_chunks in {1,2,4,16}; "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scenarios outside them skipped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" passed, 0 failed"), std::string::npos) << r.out;
}

TEST_F(ExternalCli, ReproducersStayInsideTheLimits) {
  const auto r = run_cli("verify --external " + kPort + " --page-sizes 16,128 --max-chunks 2,16 --bug off-by-one'"
                         " --fuzz 200 --seed 5 --max-reproducers 2 --only-page-sizes 16,128 --only-max-chunks 2,16"
                         " --repro-dir " + dir_.string());
  ASSERT_EQ(r.code, 1) << r.out << r.err;  // wrong plans, not a planner error: no shrunk candidate left the limits
  size_t reproducers = 0;
  for (const auto& f : fs::directory_iterator(dir_)) {
    ++reproducers;
    const json repro = json::parse(slurp(f.path()));
    EXPECT_TRUE(repro["page_size"] == 16 || repro["page_size"] == 128) << repro.dump();
    EXPECT_TRUE(repro["max_chunks"] == 2 || repro["max_chunks"] == 16) << repro.dump();
  }
  EXPECT_EQ(reproducers, 2u);
}

TEST_F(ExternalCli, LimitsThatLeaveNothingToCheckAreBadInput) {
  const auto r = run_cli("verify --only-page-sizes 3 " + kScenarios);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("mlaplan: error: --only-page-sizes/--only-max-chunks: all 13 scenarios lie outside them"),
            std::string::npos) << r.err;
  const auto zero = run_cli("verify --only-max-chunks 0 --fuzz 10");
  EXPECT_EQ(zero.code, 2) << zero.err;
  EXPECT_NE(zero.err.find("--only-max-chunks"), std::string::npos) << zero.err;
}

// bench --max: the timing requests of docs/external.md, answered here by the Python port timing itself
// with the host clock (on a GPU machine, scripts/max-reference's MAX harness answers them).
TEST_F(ExternalCli, BenchTimesTheMaxRowThroughTheTimingRequests) {
  const std::string out = (dir_ / "bench.json").string();
  const auto r = run_cli("bench --max " + kPort + "' --sizes 1,64 --kernels cpu --max-time 0.02 --json " + out);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  // The preamble wraps within 120 columns (a continuation indented): read as one line.
  const std::string flat = std::regex_replace(r.out, std::regex("\n +"), " ");
  EXPECT_NE(flat.find("max: the seed's loop in Python (scripts/external/seed_port.py), host clock (through python3 "),
            std::string::npos) << r.out;
  const json doc = json::parse(slurp(out));
  EXPECT_NE(doc["max"]["info"].get<std::string>().find("seed's loop"), std::string::npos);
  size_t max_rows = 0;
  for (const json& row : doc["rows"]) {
    if (row["kernel"] != "max") continue;
    ++max_rows;
    EXPECT_GT(row["median_us"].get<double>(), 0.0) << row.dump();
  }
  EXPECT_EQ(max_rows, 4u);  // 2 sizes x hot and cold
}

TEST_F(ExternalCli, BenchChecksTheMaxRowsPlansFirst) {
  const auto r = run_cli("bench --max " + kPort + " --bug off-by-one' --sizes 16 --kernels cpu --max-time 0.02");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("max"), std::string::npos) << r.err;
}

TEST_F(ExternalCli, BenchMaxNeedsACommandThatAnswers) {
  const auto listed = run_cli("bench --kernels max --sizes 1");
  EXPECT_EQ(listed.code, 2);
  EXPECT_NE(listed.err.find("mlaplan: error: --kernels: max is MAX's own kernel in another process; give it with --max CMD"),
            std::string::npos) << listed.err;
  const auto dead = run_cli("bench --max false --sizes 1 --kernels cpu --mode hot --max-time 0.01");
  EXPECT_EQ(dead.code, 0) << dead.err;  // the other rows are still measured
  // "before reading the request" or "before answering": which depends on how fast it exits.
  EXPECT_NE(dead.out.find("max: unavailable: external planner 'false' exited with status 1 before "), std::string::npos)
      << dead.out;
  const auto json_out = run_cli("bench --max false --sizes 1 --kernels cpu --mode hot --max-time 0.01 --format json");
  EXPECT_NE(json_out.err.find("max: unavailable: external planner 'false' exited with status 1 before "), std::string::npos)
      << json_out.err;  // beside JSON, on stderr
}
