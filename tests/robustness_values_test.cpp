// Robustness of option values: nan, inf and out-of-range numbers refused in the option's
// own words, options that do not apply refused instead of dropped, one case rule for every named
// value, messages that say the real cause, user text escaped on stdout, and run --backend cpu
// planning with the CPU planner verify uses.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

// The file's own namespace, in a unity build too: its expect_one_error also wants nothing on stdout.
namespace robustness_values_test {

using mlaplan::test::CliResult;
using mlaplan::test::run_cli;
using mlaplan::test::slurp;
namespace fs = std::filesystem;
using json = nlohmann::json;

using mlaplan::test::kScenarios;
using mlaplan::test::kData;
using mlaplan::test::lines;
using mlaplan::test::scratch;
using mlaplan::test::write;
using mlaplan::test::has;

namespace {

const std::string kWe = kScenarios + "/worked-example.json";

// Exit 2, one stderr line `mlaplan: error: ...` holding `needle`, nothing on stdout.
void expect_one_error(const CliResult& r, const std::string& needle) {
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("mlaplan: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "wanted: " << needle << "\ngot: " << r.err;
  EXPECT_EQ(r.out, "") << r.out;
}

// A terminal acts on ESC, CR, BEL and the other C0 bytes: none may reach a human-readable stdout raw.
void expect_no_control_bytes(const std::string& out) {
  for (unsigned char c : out) {
    if (c == '\n') continue;
    EXPECT_FALSE(c < 0x20 || c == 0x7f) << "raw control byte " << int(c) << " in:\n" << out;
  }
}

// A scenario whose name and description hold a newline, CR, a colour, an OSC title and a screen clear.
const std::string kHostileName = "a\\nb\\u001b[31mred\\u001b]0;pwned\\u0007\\u001b[2J";
std::string hostile_scenario(bool wrong_expected = false) {
  return std::string("{\"name\": \"") + kHostileName +
         "\", \"description\": \"line1\\rline2\\u001b[2J\", \"page_size\": 128, \"buffer_token_size\": 512, "
         "\"max_chunks\": 4, \"cache_lengths\": [500, 0, 100], \"input_row_offsets\": [0, 9, 209, 229]" +
         (wrong_expected ? ", \"expected\": {\"infeasible\": true}" : "") + "}\n";
}

}  // namespace

// ---------------------------------------------------------------- numbers

TEST(Values, NanAndInfAreRefusedByEveryFloatingOption) {
  expect_one_error(run_cli("verify --external true --external-timeout nan --fuzz 1"), "--external-timeout: nan is not a number");
  expect_one_error(run_cli("verify --external true --external-timeout inf --fuzz 1"), "--external-timeout: inf is not a number");
  expect_one_error(run_cli("bench --kernels cpu --sizes 1 --max-time nan"), "--max-time: nan is not a number; give a number of seconds from 0.001 to 600");
  expect_one_error(run_cli("bench --kernels cpu --sizes 1 --max-noise NaN"), "--max-noise: NaN is not a number");
  expect_one_error(run_cli("bench --kernels cpu --sizes 1 --max-noise -inf"), "--max-noise: -inf is not a number");
  expect_one_error(run_cli("bench --kernels cpu --sizes 1 --fill nan"), "--fill: nan is not a number; give a number from 0.01 to 1");
  expect_one_error(run_cli("bench --kernels cpu --sizes 1 --fill 0x1p-1"), "--fill: 0x1p-1 is not a number");
  // The bounds are written as a person would, not CLI11's 0.001000 or a 309-digit maximum.
  const CliResult zero = run_cli("verify --external true --external-timeout 0");
  expect_one_error(zero, "--external-timeout: 0 is out of range; give a number of seconds from 0.001 to 86400");
  EXPECT_LT(zero.err.size(), 200u) << zero.err;
}

TEST(Values, SeedsPast64BitsAndNegativeCountsAreRefusedNotClamped) {
  const std::string past = "18446744073709551616";  // 2^64
  expect_one_error(run_cli("gen --workload short-chat --seed " + past), "--seed: " + past + " is out of range; give a whole number from 0 to 18446744073709551615");
  expect_one_error(run_cli("verify --fuzz 1 --seed " + past), "--seed: " + past + " is out of range");
  expect_one_error(run_cli("bench --kernels cpu --sizes 1 --seed " + past), "--seed: " + past + " is out of range");
  expect_one_error(run_cli("sweep --workload short-chat --batches 4 --seed 99999999999999999999999"), "is out of range");
  expect_one_error(run_cli("gen --workload short-chat --seed -1"), "--seed: -1 is not a whole number");
  expect_one_error(run_cli("verify --fuzz 1 --max-reproducers -1"), "--max-reproducers: -1 is not a whole number");
  expect_one_error(run_cli("run " + kWe + " --max-sequences -1"), "--max-sequences: -1 is not a whole number");
  // The largest seed is still a seed.
  const CliResult top = run_cli("gen --workload short-chat --seed 18446744073709551615");
  EXPECT_EQ(top.code, 0) << top.err;
  EXPECT_NE(top.out, run_cli("gen --workload short-chat --seed 18446744073709551614").out);
}

TEST(Values, QuantileP99AndShare099MeanTheSame) {
  const std::string base = "sweep --workload short-chat --batches 200 --buffer-tokens 1024,4096,16384 --recommend "
                           "--max-iterations 1 --format json --quantile ";
  const CliResult p = run_cli(base + "p99"), share = run_cli(base + "0.99"), upper = run_cli(base + "P99");
  ASSERT_EQ(p.code, 0) << p.err;
  ASSERT_EQ(share.code, 0) << share.err;
  ASSERT_EQ(upper.code, 0) << upper.err;
  const json a = json::parse(p.out), b = json::parse(share.out);
  EXPECT_DOUBLE_EQ(a["recommendation"]["quantile"].get<double>(), 0.99);
  EXPECT_DOUBLE_EQ(b["recommendation"]["quantile"].get<double>(), 0.99);  // was 0.0099: 0.99 read as a percent
  EXPECT_EQ(a["recommendation"]["groups"], b["recommendation"]["groups"]);
  EXPECT_EQ(json::parse(upper.out)["recommendation"]["groups"], a["recommendation"]["groups"]);
  // A bare number above 1 could be either: refused with both spellings of what was likely meant.
  expect_one_error(run_cli(base + "99"), "--quantile 99: a share goes above 0 up to 1; for the 99th percentile write p99 or 0.99");
  expect_one_error(run_cli(base + "nan"), "--quantile nan: not a quantile");
}

// ---------------------------------------------------------------- options that do not apply

TEST(Values, VariantOptionsThatChangeNoPolicyAreRefused) {
  expect_one_error(run_cli("run " + kWe + " --backend cpu --policy max --split-align 64"),
                   "--split-align 64: it sets the split points of the packed (vllm) policy, and --policy max plans no such policy");
  expect_one_error(run_cli("run " + kWe + " --backend cpu --policy max --even-split sglang"),
                   "--even-split sglang: it sets the variant of a plain `even-split` policy, and --policy max");
  expect_one_error(run_cli("run " + kWe + " --backend cpu --policy even-split --packed trtllm"), "--packed trtllm:");
  expect_one_error(run_cli("run " + kWe + " --backend cpu --policy packed/trtllm --split-align 64"), "--split-align 64:");
  expect_one_error(run_cli("sweep --workload short-chat --batches 4 --policy max,packed --even-split sglang"), "--even-split sglang:");
  // Where they apply they are taken.
  EXPECT_EQ(run_cli("run " + kWe + " --backend cpu --policy packed --split-align 64").code, 0);
  EXPECT_EQ(run_cli("run " + kWe + " --backend cpu --policy all --even-split sglang --packed trtllm").code, 0);
}

TEST(Values, GenBatchSizeExcludesTheTokenBudgetOptions) {
  expect_one_error(run_cli("gen --workload short-chat --token-budget 100 --batch-size 4"),
                   "--token-budget and --batch-size exclude each other; drop one of them; see `mlaplan gen --help`");
  expect_one_error(run_cli("gen --workload short-chat --max-sequences 3 --batch-size 4"), "--max-sequences");
  expect_one_error(run_cli("gen --lengths " + kData + "/lengths_good.csv --seed 5"),
                   "--seed: it draws a --workload's requests and --batch-size's sizes");
}

TEST(Values, RunOnTheCpuHonoursKernelAsVerifyDoes) {
  const CliResult port = run_cli("run " + kWe + " --backend cpu --kernel max-port");
  ASSERT_EQ(port.code, 0) << port.err;
  EXPECT_TRUE(has(port.out, "planner   cpu-reference on cpu")) << port.out;
  EXPECT_TRUE(has(port.out, "verification: pass (reference self,")) << port.out;
  // seed, max-port's name before 2026-12-01, is still accepted (in any case) and plans the same.
  for (const char* alias : {"seed", "Seed"}) {
    const CliResult seed = run_cli("run " + kWe + " --backend cpu --kernel " + alias);
    ASSERT_EQ(seed.code, 0) << seed.err;
    EXPECT_EQ(seed.out.substr(0, seed.out.find("timings (us)")), port.out.substr(0, port.out.find("timings (us)")));
  }
  const CliResult fast = run_cli("run " + kWe + " --backend cpu");  // --kernel fast, the default
  ASSERT_EQ(fast.code, 0) << fast.err;
  EXPECT_TRUE(has(fast.out, "planner   cpu-fast on cpu")) << fast.out;
  EXPECT_TRUE(has(fast.out, "verification: pass (reference match,")) << fast.out;  // checked against the reference
  const json j = json::parse(run_cli("run " + kWe + " --backend cpu --kernel max-port --format json").out);
  EXPECT_EQ(j["planner"], "cpu-reference");
  EXPECT_EQ(j["verification"]["reference"], "self");
}

TEST(Values, ScenarioSelectionIsNeverAGuess) {
  const fs::path dir = scratch("select");
  const std::string one = "\"page_size\": 128, \"buffer_token_size\": 512, \"max_chunks\": 4, \"cache_lengths\": [1], \"input_lengths\": [3]";
  write(dir / "dup.json", "{\"scenarios\": [{\"name\": \"a\", " + one + "}, {\"name\": \"b\", " + one + "}, {\"name\": \"a\", " + one + "}]}\n");
  const std::string dup = (dir / "dup.json").string();
  expect_one_error(run_cli("run " + dup + " --backend cpu --scenario ''"), "--scenario: '' names no scenario");
  expect_one_error(run_cli("run " + dup + " --backend cpu --scenario a"), "--scenario a: 2 scenarios have this name (at 0, 2); pick one by its index");
  const CliResult by_index = run_cli("run " + dup + " --backend cpu --scenario 2 --format json");
  ASSERT_EQ(by_index.code, 0) << by_index.err;
  EXPECT_EQ(json::parse(by_index.out)["scenario"], "a");
  expect_one_error(run_cli("verify --plan x.json " + dup + " --scenario ''"), "--scenario: '' names no scenario");
}

TEST(Values, GenKeepsTheListShapeWhenATraceRunsOut) {
  const fs::path dir = scratch("genshort");
  write(dir / "two.csv", "cached_tokens,new_tokens\n0,10\n5,20\n");
  const CliResult r = run_cli("gen --lengths " + (dir / "two.csv").string() + " --batches 5 --name t");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_TRUE(j.contains("scenarios")) << r.out;  // was one bare scenario
  EXPECT_EQ(j["scenarios"].size(), 1u);
  EXPECT_EQ(j["scenarios"][0]["name"], "t-0");
  EXPECT_TRUE(has(r.err, "mlaplan: note: --batches 5: the trace ran out after 1 batch")) << r.err;
}

TEST(Values, BenchThatMeasuresNothingFails) {
  // The shell's own "not found" line comes first (the command's stderr is passed through); the
  // error is ours, and the exit is no longer 0.
  const CliResult r = run_cli("bench --kernels max --max /nonexistent/max-planner --sizes 1 --max-time 0.01");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "mlaplan: error: --max /nonexistent/max-planner: nothing to measure, max is unavailable")) << r.err;
  EXPECT_EQ(r.out, "");
  expect_one_error(run_cli("bench --kernels max --max false --sizes 1 --max-time 0.01"),
                   "--max false: nothing to measure, max is unavailable (max: external planner 'false' exited with status 1");
  expect_one_error(run_cli("bench --kernels cpu --sizes 1 --fill 0.5 --buffer-tokens 1024"),
                   "exclude each other; drop one of them; see `mlaplan bench --help`");
}

TEST(Values, VerifyOptionsOfOneModeAreRefusedInTheOthers) {
  expect_one_error(run_cli("verify " + kWe + " --external-timeout 5"),
                   "--external-timeout: applies only with --external; add --external or drop --external-timeout");
  expect_one_error(run_cli("verify " + kWe + " --scenario worked-example"), "--scenario: applies only with --plan");
  expect_one_error(run_cli("verify " + kWe + " --seed 3"), "--seed: it shapes the random batches, and scenario files without --fuzz N check none");
  expect_one_error(run_cli("verify " + kWe + " --max-batch-size 8"), "--max-batch-size:");
  expect_one_error(run_cli("verify --external true --fuzz 1 --kernel seed"), "exclude each other");
  expect_one_error(run_cli("verify --plan x.json " + kWe + " --backend cpu"), "exclude each other");
  // The built-in run (no path, no --fuzz) draws random batches: there they apply.
  EXPECT_EQ(run_cli("verify --seed 3 --max-batch-size 8 --large-batch-size 16 --backend cpu").code, 0);
}

TEST(Values, SweepOptionsThatDoNotApplyAreRefused) {
  expect_one_error(run_cli("sweep " + kWe + " --page-size 64"), "--page-size: it forms batches from a workload, and scenario files give their batches as they are");
  expect_one_error(run_cli("sweep " + kWe + " --seed 4"), "--seed:");
  expect_one_error(run_cli("sweep --workload short-chat --batches 4 --quantile p90"), "they set what --recommend looks for; add --recommend");
  expect_one_error(run_cli("sweep --workload short-chat --batches 4 --policy packed --max-chunks 8"),
                   "--max-chunks: it applies to the max policy only, and --policy packed has none");
  expect_one_error(run_cli("run " + kWe + " --backend cpu --format json --max-sequences 3"), "--max-sequences: it shortens the table output");
}

// ---------------------------------------------------------------- one rule for case

TEST(Values, EveryNamedValueIsTakenInAnyCase) {
  const CliResult json_upper = run_cli("run " + kWe + " --backend CPU --format JSON --policy MAX --kernel Fast");
  ASSERT_EQ(json_upper.code, 0) << json_upper.err;
  EXPECT_EQ(json::parse(json_upper.out)["policy"], "max");
  EXPECT_EQ(run_cli("run " + kWe + " --backend cpu --policy Packed --packed TRTLLM --model DeepSeek-V3 --dtype FP8").code, 0);
  EXPECT_EQ(run_cli("run " + kWe + " --backend cpu --policy ALL --even-split SGLang").code, 0);
  EXPECT_EQ(run_cli("sweep --workload Short-Chat --batches 4 --format MD --backend CPU --policy Variants").code, 0);
  EXPECT_EQ(run_cli("verify --fuzz 2 --kernel ALL --backend cpu").code, 0);
  const CliResult bench = run_cli("bench --kernels CPU,Cpu-Fast --sizes 1 --mode HOT --format CSV --distribution Fixed --max-time 0.01");
  EXPECT_EQ(bench.code, 0) << bench.err;
  EXPECT_EQ(run_cli("sweep --workload short-chat --batches 4 --recommend --max-iterations 2 --quantile MAX --model deepseek-v3 "
                    "--memory-budget 8gib").code,
            0);
  // The messages list every choice, --policy's all and variants included.
  expect_one_error(run_cli("run " + kWe + " --format yaml"), "--format: 'yaml' is not one of table, json or csv; see `mlaplan run --help`");
  expect_one_error(run_cli("run " + kWe + " --policy evensplit"), "all (every engine), engines (the four) or variants (the engines' five by algorithm)");
}

// ---------------------------------------------------------------- messages

TEST(Values, MessagesSayTheOptionsOwnWords) {
  const CliResult zero = run_cli("verify --fuzz 1 --max-batch-size 0");
  expect_one_error(zero, "--max-batch-size: 0 is out of range; give a whole number from 1 to 4294967295; see `mlaplan verify --help`");
  EXPECT_FALSE(has(zero.err, "0.000000")) << zero.err;
  expect_one_error(run_cli("verify --fuzz 1e3"), "--fuzz: 1e3 is not written in digits; give a whole number from 0 to 1000000000 (e.g. 1000)");
  expect_one_error(run_cli("run " + kWe + " --max-sequences -0"), "--max-sequences: -0 is not a whole number");
  expect_one_error(run_cli("sweep --workload short-chat --batches 4 --buffer-tokens 1099511627776"),
                   "--buffer-tokens: 1099511627776 is out of range; values go from 1 to 2147483647");
  expect_one_error(run_cli("sweep --workload short-chat --batches 4 --buffer-tokens ,,"),
                   "--buffer-tokens: ',,' has an empty item (two commas in a row, or one at an end)");
  expect_one_error(run_cli("sweep --workload short-chat --batches 4 --recommend --max-iterations 1 --model deepseek-v3 --memory-budget 0"),
                   "--memory-budget 0: a size of 0 bytes fits no buffer");
  expect_one_error(run_cli("sweep --workload short-chat --batches 4 --recommend --max-iterations 1 --model deepseek-v3 --memory-budget 8GX"),
                   "--memory-budget 8GX: unknown unit 'GX'");
  // Parse errors point to the subcommand's help.
  expect_one_error(run_cli("gen --workload short-chat --batches 0"), "see `mlaplan gen --help`");
  expect_one_error(run_cli("sweep --workload short-chat --tp"), "see `mlaplan sweep --help`");
}

TEST(Values, ReadersNameTheMissingKeyAndTheListEntry) {
  const fs::path dir = scratch("readers");
  json cfg = json::parse(slurp(kData + "/deepseek_v3_config.json"));
  cfg.erase("kv_lora_rank");
  write(dir / "cut.json", cfg.dump());
  const CliResult r = run_cli("run " + kWe + " --backend cpu --model-config " + (dir / "cut.json").string());
  expect_one_error(r, "cut.json: kv_lora_rank: missing, though the config has the other MLA fields");
  EXPECT_FALSE(has(r.err, "not an MLA model")) << r.err;

  write(dir / "list.json", "{\"scenarios\": [" + hostile_scenario() + ", 7]}");
  const CliResult l = run_cli("run " + (dir / "list.json").string() + " --backend cpu");
  expect_one_error(l, "list.json: scenarios[1]: expected a scenario object, got 7");
  EXPECT_FALSE(has(l.err, "scenarios[1].scenarios[1]")) << l.err;
}

// ---------------------------------------------------------------- escaped stdout

TEST(Values, RunEscapesNamesAndDescriptionsOnStdout) {
  const fs::path dir = scratch("escrun");
  write(dir / "evil.json", hostile_scenario());
  const CliResult r = run_cli("run " + (dir / "evil.json").string() + " --backend cpu");
  ASSERT_EQ(r.code, 0) << r.err;
  expect_no_control_bytes(r.out);
  EXPECT_TRUE(has(r.out, "scenario  a\\nb\\x1b[31mred\\x1b]0;pwned\\x07\\x1b[2J")) << r.out;
  EXPECT_TRUE(has(r.out, "line1\\rline2\\x1b[2J")) << r.out;
  const CliResult compare = run_cli("run " + (dir / "evil.json").string() + " --backend cpu --policy all");
  ASSERT_EQ(compare.code, 0) << compare.err;
  expect_no_control_bytes(compare.out);
  EXPECT_TRUE(has(compare.out, "policies compared on a\\nb\\x1b[31m")) << compare.out;
  // JSON keeps its own escaping: the name reads back exactly.
  const json j = json::parse(run_cli("run " + (dir / "evil.json").string() + " --backend cpu --format json").out);
  EXPECT_EQ(j["scenario"], "a\nb\x1b[31mred\x1b]0;pwned\x07\x1b[2J");
}

TEST(Values, VerifyAndSweepEscapeNamesAndPathsOnStdout) {
  const fs::path dir = scratch("escverify");
  const fs::path evil = dir / "x\x1b[2Jy.json";  // the path is user text too
  write(evil, hostile_scenario(true));              // a wrong expected block: a FAIL line
  const CliResult r = run_cli("verify '" + evil.string() + "' --backend cpu --repro-dir " + (dir / "repro").string());
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  expect_no_control_bytes(r.out);
  EXPECT_TRUE(has(r.out, "  FAIL a\\nb\\x1b[31mred")) << r.out;
  EXPECT_TRUE(has(r.out, "x\\x1b[2Jy.json")) << r.out;

  write(evil, hostile_scenario());
  const CliResult s = run_cli("sweep '" + evil.string() + "' --buffer-tokens 512");
  ASSERT_EQ(s.code, 0) << s.err;
  expect_no_control_bytes(s.out);
  EXPECT_TRUE(has(s.out, "x\\x1b[2Jy.json")) << s.out;
}

// ---------------------------------------------------------------- newcomer fixes

TEST(Values, SweepHelpNamesItsPositionalOnce) {
  const CliResult r = run_cli("sweep --help");
  ASSERT_EQ(r.code, 0);
  EXPECT_FALSE(has(r.out, "PATH ... ...")) << r.out;
  EXPECT_TRUE(has(r.out, "scenarios PATH ...")) << r.out;
}

TEST(Values, JsonNegativeZeroIsZero) {
  const fs::path dir = scratch("negzero");
  write(dir / "z.json", "{\"page_size\": 1, \"buffer_token_size\": 8, \"max_chunks\": 2, \"cache_lengths\": [-0], \"input_lengths\": [2]}");
  const CliResult r = run_cli("run " + (dir / "z.json").string() + " --backend cpu --format json");
  ASSERT_EQ(r.code, 0) << r.err;  // was "cache_lengths[0]: expected a non-negative integer below 2^32, got 0"
  EXPECT_EQ(json::parse(r.out)["padded_tokens"], 2);  // cache 0 + 2 new tokens, page 1
}

}  // namespace robustness_values_test
