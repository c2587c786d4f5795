// `verify --external CMD --policy NAME`: a port of an engine's policy through the line protocol of
// docs/external.md, with scripts/external/packed_port.py (vLLM's packed split in Python) as the port:
// as it is, it passes the fuzzer; with a planted bug, verify catches it, shrinks a reproducer that
// replays; refusals travel as `infeasible`; max's protocol is unchanged byte for byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

using nlohmann::json;
using mlaplan::test::expect_bad_input;
using mlaplan::test::has;
using mlaplan::test::kScenarios;
using mlaplan::test::run_cli;
using mlaplan::test::slurp;
using mlaplan::test::write;
namespace fs = std::filesystem;

namespace {

const std::string kPackedPortCmd = "'python3 " MLAPLAN_SOURCE_DIR "/scripts/external/packed_port.py";
const std::string kSeedPortCmd = "python3 " MLAPLAN_SOURCE_DIR "/scripts/external/seed_port.py";
// Large batches of packed take one chunk row per run of contexts: kept small, so the Python port is quick.
const std::string kPolicyPortBatches = " --large-batch-size 128";

class ExternalPolicyCli : public testing::Test {
 protected:
  void SetUp() override { dir_ = mlaplan::test::scratch(testing::UnitTest::GetInstance()->current_test_info()->name()); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

}  // namespace

TEST_F(ExternalPolicyCli, APortOfPackedPassesTheFuzzer) {
  const fs::path junit = dir_ / "verify.xml";
  const auto r = run_cli("verify --external " + kPackedPortCmd + "' --policy packed --fuzz 300 --seed 11" + kPolicyPortBatches + " " +
                         kScenarios + " --junit " + junit.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "a port of policy packed")) << r.out;
  EXPECT_NE(r.out.find("313 passed, 0 failed\n"), std::string::npos) << r.out;  // 13 scenarios + 300 batches
  // The scenarios' expected blocks are max's plans: said to be left out, not compared.
  EXPECT_NE(r.err.find("expected block, max's plan, which is not compared under --policy packed"), std::string::npos)
      << r.err;
  const std::string xml = slurp(junit);
  EXPECT_NE(xml.find("external (packed)"), std::string::npos);
  EXPECT_EQ(xml.find("<failure"), std::string::npos);
  // vllm names the same algorithm.
  const auto engine = run_cli("verify --external " + kPackedPortCmd + "' --policy vllm --fuzz 100 --seed 2" + kPolicyPortBatches);
  EXPECT_EQ(engine.code, 0) << engine.out << engine.err;
}

TEST_F(ExternalPolicyCli, APlantedDefectIsCaughtShrunkAndReplayed) {
  const auto r = run_cli("verify --external " + kPackedPortCmd + " --bug unaligned' --policy packed --fuzz 300 --seed 5" + kPolicyPortBatches +
                         " --max-reproducers 1 --repro-dir " + dir_.string());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  const size_t fail = r.out.find("  FAIL fuzz-5-");
  ASSERT_NE(fail, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[external (packed)]", fail), std::string::npos) << r.out;
  size_t reproducers = 0;
  for (const auto& f : fs::directory_iterator(dir_)) {
    ++reproducers;
    const json repro = json::parse(slurp(f.path()));
    EXPECT_FALSE(repro.contains("expected")) << repro.dump();  // max's plan would not be this policy's
    EXPECT_NE(repro["description"].get<std::string>().find("--policy packed"), std::string::npos) << repro.dump();
    // It replays: the bug fails it, the port without the bug passes it.
    EXPECT_EQ(run_cli("verify --external " + kPackedPortCmd + " --bug unaligned' --policy packed " + f.path().string() +
                      " --repro-dir " + (dir_ / "again").string()).code, 1);
    EXPECT_EQ(run_cli("verify --external " + kPackedPortCmd + "' --policy packed " + f.path().string()).code, 0);
  }
  EXPECT_EQ(reproducers, 1u);
}

TEST_F(ExternalPolicyCli, AWrongCountOfChunksIsAVerdict) {
  // [10, 0, 10] in 20 rows: vLLM's chunk ends at the request without context (2 chunks); skipping it
  // (TensorRT-LLM's rule) packs one chunk, so the answer has one chunk row fewer.
  write(dir_ / "gap.json", R"({"name": "gap", "page_size": 1, "buffer_token_size": 20, "max_chunks": 1,
                               "cache_lengths": [10, 0, 10], "input_lengths": [1, 1, 1]})");
  const auto r = run_cli("verify --external " + kPackedPortCmd + " --bug skip-empty' --policy packed " + (dir_ / "gap.json").string() +
                         " --repro-dir " + (dir_ / "repro").string());
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "the answer holds 1 chunk rows; policy packed's plan has 2 (max_chunks 1, or its 2 chunks when more)"))
      << r.out;
}

TEST_F(ExternalPolicyCli, RefusalsTravelAsInfeasible) {
  // A port that refuses everything: right where the policy refuses (vLLM's even split with a share
  // below one page), wrong elsewhere; a refusal stating max_chunks is max's, not this policy's.
  const std::string refuse = " --external 'while read l; do echo infeasible; done' --policy even-split";
  const auto r = run_cli("verify" + refuse + " --fuzz 60 --seed 4 --max-reproducers 0");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("a port of policy even-split/vllm"), std::string::npos) << r.out;
  const auto mixed = json::parse([&] {
    run_cli("verify" + refuse + " --fuzz 60 --seed 4 --max-reproducers 0 --report " + (dir_ / "r.json").string());
    return slurp(dir_ / "r.json");
  }());
  size_t passed = 0, failed = 0;
  for (const auto& c : mixed["cases"]) (c["status"] == "pass" ? passed : failed)++;
  EXPECT_GT(passed, 0u);  // the batches even-split/vllm refuses
  EXPECT_GT(failed, 0u);
  const auto plans = run_cli("verify" + refuse + " " + kScenarios + "/worked-example.json --repro-dir " + dir_.string());
  EXPECT_TRUE(has(plans.out, "the port refuses a batch policy even-split/vllm plans in")) << plans.out;
  const auto stated = run_cli("verify --external 'while read l; do echo infeasible 3; done' --policy packed " + kScenarios +
                              "/worked-example.json --repro-dir " + dir_.string());
  EXPECT_EQ(stated.code, 1);
  EXPECT_TRUE(has(stated.out, "has no such bound")) << stated.out;
}

TEST_F(ExternalPolicyCli, MaxIsUnchangedByteForByte) {
  // The requests a max port reads, logged by tee: the same with --policy max as without it, as
  // external_planner_test spells them; a policy's request carries its name.
  const std::string args = " " + kScenarios + "/worked-example.json --fuzz 20 --seed 9" + kPolicyPortBatches;
  auto requests = [&](const std::string& port, const std::string& option, const std::string& summary) {
    const fs::path log = dir_ / "requests.txt";
    const auto r = run_cli("verify --external 'tee " + log.string() + " | " + port + "'" + option + args);
    EXPECT_EQ(r.code, 0) << option << r.out << r.err;
    EXPECT_NE(r.out.find(summary), std::string::npos) << r.out;  // a given seed: the summary line as before
    return slurp(log);
  };
  const std::string plain = requests(kSeedPortCmd, "", "\n21 passed, 0 failed\n");
  EXPECT_EQ(plain.rfind("plan 128 512 4 3 500 0 100 0 9 209 229\n", 0), 0u) << plain.substr(0, 200);
  EXPECT_EQ(requests(kSeedPortCmd, " --policy max", "\n21 passed, 0 failed\n"), plain);
  const std::string packed = requests(kPackedPortCmd.substr(1), " --policy packed", "\n21 passed, 0 failed\n");
  EXPECT_EQ(packed.rfind("plan packed 128 512 4 3 500 0 100 0 9 209 229\n", 0), 0u) << packed.substr(0, 200);
}

TEST_F(ExternalPolicyCli, ADrawnSeedIsOnTheSummaryLine) {
  const auto r = run_cli("verify --external " + kPackedPortCmd + "' --policy packed --fuzz 5" + kPolicyPortBatches);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const size_t at = r.out.find("5 passed, 0 failed (random batches from --seed ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string seed = r.out.substr(at + 47, r.out.find(';', at) - at - 47);
  EXPECT_NE(r.out.find("fuzz: 5 random batches from --seed " + seed + "\n"), std::string::npos) << seed << "\n" << r.out;
}

TEST_F(ExternalPolicyCli, APolicyNoPortCanHaveIsRefused) {
  const std::string port = "verify --external " + kPackedPortCmd + "' --fuzz 5 --policy ";
  expect_bad_input(port + "bogus", "--policy bogus: unknown policy; a port's policy is one of max, packed");
  expect_bad_input(port + "waves", "--policy waves: mlaplan's own policy, which no engine runs");
  expect_bad_input(port + "guided:x.json", "--policy guided:x.json: mlaplan's own policy");
  expect_bad_input(port + "packed,max", "--policy packed,max: one policy per run");
  expect_bad_input(port + "all", "--policy all: one policy per run");
  expect_bad_input("verify --fuzz 5 --policy packed", "--policy: applies only with --external");
}
