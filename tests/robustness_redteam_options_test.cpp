// Option handling found wanting by the red-team campaign: whole numbers read as decimal whatever
// their leading zeros, an explicit `verify --fuzz 0` that asks for nothing, empty values refused for
// every option, one output per stdout, empty list items, CLI11's texts in the house's words, and
// --repro-dir checked before any work.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

// The file's own namespace, in a unity build too: its expect_one_error also wants nothing on stdout.
namespace robustness_redteam_options_test {

using mlaplan::test::CliResult;
using mlaplan::test::run_cli;
using mlaplan::test::slurp;
namespace fs = std::filesystem;
using json = nlohmann::json;

using mlaplan::test::lines;
using mlaplan::test::has;
using mlaplan::test::scratch;

namespace {

const std::string kWe = MLAPLAN_SOURCE_DIR "/scenarios/worked-example.json";

// Exit 2, one stderr line `mlaplan: error: ...` holding `needle`, nothing on stdout.
void expect_one_error(const CliResult& r, const std::string& needle) {
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("mlaplan: error: ", 0), 0u) << r.err;
  EXPECT_TRUE(has(r.err, needle)) << "wanted: " << needle << "\ngot: " << r.err;
  EXPECT_EQ(r.out, "") << r.out;
}

}  // namespace

TEST(RobustRedteamOptions, LeadingZerosAreDecimal) {
  // 010 is ten, not octal eight; 09 is nine, not a conversion error.
  const CliResult ten = run_cli("verify --fuzz 010 --seed 1 --backend cpu");
  EXPECT_EQ(ten.code, 0) << ten.err;
  EXPECT_TRUE(has(ten.out, "10 passed, 0 failed")) << ten.out;
  const CliResult nine = run_cli("verify --fuzz 09 --seed 1 --backend cpu");
  EXPECT_EQ(nine.code, 0) << nine.err;
  EXPECT_TRUE(has(nine.out, "9 passed, 0 failed")) << nine.out;
  // A seed with a leading zero draws what the plain seed draws.
  const fs::path dir = scratch("seed");
  const CliResult a = run_cli("gen --workload short-chat --seed 010 -o " + (dir / "a.json").string());
  const CliResult b = run_cli("gen --workload short-chat --seed 10 -o " + (dir / "b.json").string());
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(slurp(dir / "a.json"), slurp(dir / "b.json"));
  // The lists too, and 00 is zero (a range's lower end still applies).
  const CliResult list = run_cli("verify --fuzz 02 --seed 1 --backend cpu --only-page-sizes 016,01 --only-max-chunks 08");
  EXPECT_EQ(list.code, 0) << list.err;
  expect_one_error(run_cli("verify --fuzz 1 --backend cpu --only-page-sizes 00"), "--only-page-sizes: '00': 00 is out of range");
  fs::remove_all(dir);
}

TEST(RobustRedteamOptions, ExplicitFuzzZeroVerifiesNothing) {
  expect_one_error(run_cli("verify --fuzz 0 --seed 1 --backend cpu"), "--fuzz 0: nothing to verify");
  expect_one_error(run_cli("verify --fuzz 00 --backend cpu"), "give scenario files or a positive --fuzz, or neither");
  // With a scenario file, --fuzz 0 still checks the file.
  const CliResult with_file = run_cli("verify " + kWe + " --fuzz 0 --backend cpu");
  EXPECT_EQ(with_file.code, 0) << with_file.err;
}

TEST(RobustRedteamOptions, EmptyValuesAreRefused) {
  const fs::path dir = scratch("empty");
  const std::string run = "run " + kWe + " --backend cpu ";
  expect_one_error(run_cli("verify --external '' --fuzz 1"), "--external: an empty value; give a CMD or drop --external");
  expect_one_error(run_cli("verify --external '' " + kWe), "--external: an empty value");
  expect_one_error(run_cli(run + "-o ''"), "--output: an empty value; give a FILE");
  expect_one_error(run_cli(run + "--svg ''"), "--svg: an empty value");
  expect_one_error(run_cli(run + "--trace ''"), "--trace: an empty value");
  expect_one_error(run_cli(run + "--model-config ''"), "--model-config: an empty value");
  expect_one_error(run_cli(run + "--model ''"), "--model: an empty value");
  expect_one_error(run_cli("gen --workload short-chat --name '' -o " + (dir / "g.json").string()), "--name: an empty value");
  expect_one_error(run_cli("verify --report '' --fuzz 1 --backend cpu"), "--report: an empty value");
  // The options' own words stay where they had them.
  expect_one_error(run_cli(run + "--scenario ''"), "--scenario: '' names no scenario");
  EXPECT_TRUE(fs::is_empty(dir));
  // -o - is still stdout.
  const CliResult dash = run_cli(run + "-o -");
  EXPECT_EQ(dash.code, 0) << dash.err;
  EXPECT_FALSE(dash.out.empty());
  fs::remove_all(dir);
}

TEST(RobustRedteamOptions, OneOutputPerStdout) {
  expect_one_error(run_cli("run " + kWe + " --backend cpu -o - --svg -"), "--svg -: stdout already takes the output of -o");
  // -o left out is stdout too.
  expect_one_error(run_cli("run " + kWe + " --backend cpu --svg -"), "(stdout when -o is not given)");
  // With -o a file, the picture may go to stdout alone.
  const fs::path dir = scratch("stdout");
  const CliResult svg = run_cli("run " + kWe + " --backend cpu -o " + (dir / "t.txt").string() + " --svg -");
  EXPECT_EQ(svg.code, 0) << svg.err;
  EXPECT_EQ(svg.out.rfind("<svg", 0) == 0 || has(svg.out, "<svg"), true) << svg.out.substr(0, 200);
  EXPECT_TRUE(fs::exists(dir / "t.txt"));
  fs::remove_all(dir);
}

TEST(RobustRedteamOptions, ListsRefuseEmptyItems) {
  expect_one_error(run_cli("verify --fuzz 1 --only-page-sizes , --backend cpu"),
                   "--only-page-sizes: ',' has an empty item");
  expect_one_error(run_cli("verify --fuzz 1 --only-page-sizes 1,,2 --backend cpu"), "--only-page-sizes: '1,,2' has an empty item");
  expect_one_error(run_cli("verify --fuzz 1 --only-max-chunks 4, --backend cpu"), "--only-max-chunks: '4,' has an empty item");
  expect_one_error(run_cli("verify --fuzz 1 --only-max-chunks 4,x --backend cpu"), "--only-max-chunks: '4,x': x is not a whole number");
  // A valid list still works, repeated options add up.
  const CliResult ok = run_cli("verify --fuzz 2 --seed 1 --backend cpu --only-page-sizes 1,16 --only-page-sizes 64");
  EXPECT_EQ(ok.code, 0) << ok.err;
}

TEST(RobustRedteamOptions, ParseErrorsInHouseWords) {
  expect_one_error(run_cli("run " + kWe + " --format json --format csv"),
                   "--format: given twice; give it once; see `mlaplan run --help`");
  expect_one_error(run_cli("run " + kWe + " " + kWe), "mlaplan run takes one scenario file; see `mlaplan run --help`");
  expect_one_error(run_cli("run " + kWe + " --no-verify=banana"), "--no-verify: a flag takes no value; drop =banana");
  expect_one_error(run_cli("''"), "'' is not a subcommand; the subcommands are run, bench, verify, gen, sweep");
  expect_one_error(run_cli(""), "a subcommand is required: run, bench, verify, gen, sweep; see `mlaplan --help`");
  expect_one_error(run_cli("--bogus run"), "unknown option --bogus before the subcommand");
  for (const CliResult& r : {run_cli("run " + kWe + " --format json --format csv"), run_cli("run " + kWe + " " + kWe)}) {
    EXPECT_FALSE(has(r.err, "At Most")) << r.err;
    EXPECT_FALSE(has(r.err, "not expected")) << r.err;
  }
}

TEST(RobustRedteamOptions, ReproDirCheckedBeforeWork) {
  const fs::path dir = scratch("repro");
  std::ofstream(dir / "f") << "x";
  const std::string f = (dir / "f").string();
  expect_one_error(run_cli("verify --external 'yes infeasible' --fuzz 3 --seed 1 --repro-dir " + f),
                   "--repro-dir " + f + ": it is not a folder");
  expect_one_error(run_cli("verify --fuzz 1 --backend cpu --repro-dir " + f + "/sub"), f + " is not a folder");
  // A folder still to be made is fine.
  const CliResult ok = run_cli("verify --fuzz 1 --backend cpu --repro-dir " + (dir / "new" / "deeper").string());
  EXPECT_EQ(ok.code, 0) << ok.err;
  fs::remove_all(dir);
}

}  // namespace robustness_redteam_options_test
