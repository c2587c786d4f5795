// Bounded resources and interrupts everywhere: every size that drives allocation is
// checked against a stated budget before anything is allocated (exit 2 naming the field, the size it
// would take and the fix), work over many scenarios is linear in their number, gen writes nothing
// run cannot read, and every subcommand stops within a second of Ctrl-C, inside its largest unit of
// work too. The old build allocated gigabytes on these inputs, so each command runs under a memory
// cap and a timeout: on a build without the budgets it fails fast instead of swapping.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"

// The file's own namespace, in a unity build too: its interrupt_after runs the command in its folder under the memory cap.
namespace robustness_limits_test {

using mlaplan::test::CliResult;
using mlaplan::test::run_cli;
using mlaplan::test::slurp;
namespace fs = std::filesystem;
using mlaplan::test::lines;
using mlaplan::test::scratch;
using mlaplan::test::kPromptExit;

namespace {

void expect_one_error(const CliResult& r, const std::string& needle) {
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("mlaplan: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "wanted: " << needle << "\ngot: " << r.err;
}

const std::string kSource = MLAPLAN_SOURCE_DIR;
// 3 GiB of address space and 60 s: enough for everything these tests should do, far too little
// for what an unbounded command does with the same input.
// A 3 GiB address-space cap makes a binary that ignores the budget fail fast. AddressSanitizer
// reserves terabytes of address space for its shadow, so the sanitize build runs without the cap.
#if defined(MLAPLAN_UNDER_ASAN)  // cli_runner.hpp
const std::string kUlimit = "";
#else
const std::string kUlimit = "ulimit -v 3145728; ";
#endif
const std::string kCapped = kUlimit + "timeout 60";

CliResult capped(const std::string& args) { return run_cli(args, kCapped); }

// A scenario of `b` sequences of one new token each, in buffers of `n` rows and `m` chunks.
std::string scenario_json(const std::string& name, uint64_t b, uint64_t n, uint64_t m) {
  std::string cache = "[", lengths = "[";
  for (uint64_t i = 0; i < b; ++i) {
    cache += i ? ",0" : "0";
    lengths += i ? ",1" : "1";
  }
  return "{\"name\": \"" + name + "\", \"page_size\": 1, \"buffer_token_size\": " + std::to_string(n) +
         ", \"max_chunks\": " + std::to_string(m) + ", \"cache_lengths\": " + cache + "], \"input_lengths\": " + lengths +
         "]}";
}

std::string write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

// `count` small scenarios in one list file.
std::string many_scenarios(const fs::path& path, size_t count) {
  std::string text = "{\"scenarios\": [\n";
  for (size_t i = 0; i < count; ++i)
    text += (i ? ",\n" : "") + std::string("{\"name\": \"s") + std::to_string(i) +
            "\", \"page_size\": 16, \"buffer_token_size\": 64, \"max_chunks\": 4, \"cache_lengths\": [5, 40, 0], "
            "\"input_lengths\": [3, " + std::to_string(1 + i % 50) + ", 7]}";
  return write_file(path, text + "\n]}\n");
}

double seconds_of(const std::string& args) {
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = run_cli(args, kCapped);
  EXPECT_EQ(r.code, 0) << r.err;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

using Stopped = mlaplan::test::Interrupted;

// The command runs in its folder, under the address-space cap.
Stopped interrupt_after(const std::string& args, std::chrono::milliseconds delay, const fs::path& dir) {
  return mlaplan::test::interrupt_after(args, delay, dir, "cd " + dir.string() + " && " + kUlimit);
}

// Nothing but the captured streams (and the inputs named) is left in the folder.
void expect_nothing_written(const fs::path& dir, std::initializer_list<std::string> inputs = {}) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const bool known = name == "stdout" || name == "stderr" || std::find(inputs.begin(), inputs.end(), name) != inputs.end();
    EXPECT_TRUE(known) << "left behind: " << e.path();
  }
}

}  // namespace

// The cases: verify's random batch sizes grew to 16.4 GB and 6.3 GB.
TEST(Limits, VerifyRandomBatchSizesHaveAMaximum) {
  expect_one_error(capped("verify --backend cpu --large-batch-size 100000000 --fuzz 50"),
                   "--large-batch-size 100000000: above 1048576");
  expect_one_error(capped("verify --backend cpu --max-batch-size 1000000000 --fuzz 5"),
                   "--max-batch-size 1000000000: above 16384");
  // Every chunk count allowed could be the largest: 2^20 of them for batches of up to 4096 sequences.
  expect_one_error(capped("verify --backend cpu --only-max-chunks 1048576 --fuzz 5"),
                   "--only-max-chunks 1048576: random batches of up to 4096 sequences in up to 1048576 chunks take up to "
                   "32.0 GiB of tables");
  expect_one_error(capped("verify --backend cpu --max-batch-size 16384 --fuzz 5 --memory-limit 64MiB"),
                   "--max-batch-size 16384: random batches of up to 16387 sequences in up to 4096 chunks take up to 512 MiB");
  // At the maxima and the default limit a few batches are fine.
  const CliResult ok = capped("verify --backend cpu --max-batch-size 16384 --large-batch-size 1048576 --fuzz 3 --seed 5");
  EXPECT_EQ(ok.code, 0) << ok.out << ok.err;
}

// The cases: B = 10^4 in 50,000 chunks took 27 s and 3.9 GB for one chunk; 200,000 chunks
// said only "out of host memory".
TEST(Limits, ScenarioTablesPastTheMemoryLimitAreRefused) {
  const fs::path dir = scratch("tables");
  const std::string big = write_file(dir / "big.json", scenario_json("big", 10000, 1 << 20, 50000));
  const std::string huge = write_file(dir / "huge.json", scenario_json("huge", 10000, 1 << 20, 200000));
  const std::string want =
      "big.json: max_chunks: 50000 chunks x 10001 columns of tables take 3.73 GiB, above the default --memory-limit of "
      "2.00 GiB; the batch needs only 1 chunk, so lower max_chunks to at most 26840, or raise --memory-limit";
  expect_one_error(capped("run " + big + " --backend cpu"), want);
  expect_one_error(capped("verify " + big + " --backend cpu"), want);
  expect_one_error(capped("verify --plan " + big + " " + big), want);  // before the tables file is read
  expect_one_error(capped("run " + huge + " --backend cpu"), "200000 chunks x 10001 columns of tables take 14.9 GiB");
  expect_one_error(capped("verify " + huge), "huge.json: max_chunks: 200000 chunks");
  expect_one_error(capped("sweep " + big + " --max-chunks 50000 --buffer-tokens 1048576"),
                   "--max-chunks 50000: batches of up to 10000 sequences in 50000 chunks take 3.73 GiB of tables");
  // Inside a list, the scenario is named by its place.
  const std::string list = write_file(dir / "list.json", "{\"scenarios\": [" + scenario_json("small", 3, 64, 2) + ", " +
                                                              scenario_json("big", 10000, 1 << 20, 50000) + "]}");
  expect_one_error(capped("run " + list + " --backend cpu"), "list.json: scenarios[1].max_chunks: 50000 chunks");
  // The limit moves both ways.
  const std::string mid = write_file(dir / "mid.json", scenario_json("mid", 1000, 1 << 20, 1000));
  EXPECT_EQ(capped("run " + mid + " --backend cpu --format json -o " + (dir / "mid.out").string()).code, 0);
  expect_one_error(capped("run " + mid + " --backend cpu --memory-limit 4MiB"),
                   "mid.json: max_chunks: 1000 chunks x 1001 columns of tables take 7.64 MiB, above --memory-limit 4.00 MiB");
  // run's text counts too: --format csv writes a line per cell.
  expect_one_error(capped("run " + mid + " --backend cpu --format csv --memory-limit 32MiB"),
                   "(and up to 53.5 MiB more for --format csv text)");
  fs::remove_all(dir);
}

TEST(Limits, MemoryLimitValuesAreChecked) {
  const std::string s = kSource + "/scenarios/worked-example.json";
  expect_one_error(run_cli("run " + s + " --memory-limit lots"), "--memory-limit lots: not a size; write e.g. 8GiB");
  expect_one_error(run_cli("run " + s + " --memory-limit 1000"), "--memory-limit 1000: below the least of 1.00 MiB");
  expect_one_error(run_cli("verify " + s + " --memory-limit 0"), "--memory-limit 0:");
  expect_one_error(run_cli("sweep " + s + " --memory-limit -1GiB"), "--memory-limit -1GiB:");
  expect_one_error(run_cli("bench --memory-limit 1KiB"), "--memory-limit 1KiB:");
  EXPECT_EQ(run_cli("run " + s + " --backend cpu --memory-limit 1MiB").code, 0);
}

TEST(Limits, BenchSizesAndChunkCountsAreBounded) {
  expect_one_error(capped("bench --kernels cpu --sizes 4294967294 --no-progress"),
                   "--sizes 4294967294: a batch of 4294967294 sequences in --max-chunks 16 chunks takes 640 GiB of "
                   "tables and 4 input sets, above the default --memory-limit of 2.00 GiB; use sizes up to 13421771");
  expect_one_error(capped("bench --kernels cpu --sizes 1,1048576 --max-chunks 1048576 --no-progress"),
                   "--sizes 1048576: a batch of 1048576 sequences in --max-chunks 1048576 chunks");
}

TEST(Limits, SweepAndGenBatchSettingsAreBounded) {
  // A count that even batches of one sequence cannot hold is refused before forming any.
  expect_one_error(capped("sweep --workload short-chat --batches 100000000 --batch-size 64 --memory-limit 64MiB"),
                   "--batches 100000000: that many batches take at least ");
  // Otherwise forming stops as soon as the batches and their counts pass the limit, instead of at the end.
  expect_one_error(capped("sweep --workload short-chat --batches 100000 --batch-size 64 --memory-limit 64MiB"),
                   "--batches 100000: the first ");
  const CliResult wide = capped("sweep --workload short-chat --batches 100 --batch-size 1000000 --memory-limit 16MiB");
  expect_one_error(wide, "--batches 100: the first ");
  expect_one_error(wide, "above --memory-limit 16.0 MiB; form fewer batches");
  expect_one_error(capped("gen --workload short-chat --batch-size 256 --max-chunks 1048576"),
                   "--max-chunks 1048576: batch 0 holds 256 sequences, and its tables in 1048576 chunks take 2.01 GiB");
}

// Rows multiply by the models and TPs swept, and so do the counts a batch keeps: four TPs hold 11 x 4
// counts per batch where one holds 11 (44 more bytes for each extra TP's 11), as mlaplan.sweep counts.
TEST(Limits, SweepCountsEveryModelAndTpItSweeps) {
  const std::string base = "sweep --workload short-chat --batches 100000 --batch-size 1 --buffer-tokens 1024:1048576:x2 "
                           "--policy packed --model deepseek-v3 --memory-limit 4MiB --tp ";
  const CliResult one = capped(base + "8"), four = capped(base + "1,2,4,8");
  auto bytes = [](const CliResult& r) {
    expect_one_error(r, "bytes each with one sequence)");
    const size_t at = r.err.find(" bytes each");
    return std::stoull(r.err.substr(r.err.rfind('(', at) + 1));
  };
  // A planning thread per core, at most one per row, keeps one more count each.
  const uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t threads_one = std::min<uint64_t>(cores, 11), threads_four = std::min<uint64_t>(cores, 44);
  EXPECT_EQ(bytes(four) - bytes(one), 4 * (44 - 11) + 4 * (threads_four - threads_one)) << one.err << four.err;
}

// The case: gen --batches 1000000 wrote a 311 MB file that run refused as over 256 MiB.
TEST(Limits, GenWritesNothingRunCannotRead) {
  const fs::path dir = scratch("gen");
  const std::string out = (dir / "out.json").string();
  // Known before forming: a million batches of 200 sequences take at least 900 MB.
  expect_one_error(capped("gen --workload short-chat --batches 1000000 --batch-size 200 -o " + out),
                   "--batches 1000000: the file would take at least 858 MiB, more than the 256 MiB run and verify read");
  // From the formed batches' numbers, before any text is built (building it first took 15 s).
  expect_one_error(capped("gen --workload coding-agent --batches 1000000 -o " + out),
                   "--batches 1000000: the file would pass 256 MiB by scenario ");
  expect_one_error(capped("gen --workload short-chat --batches 1000000 --batch-size 1 --name " + std::string(300, 'x') +
                          " -o " + out),
                   "--batches 1000000: the file would pass 256 MiB by scenario ");
  EXPECT_FALSE(fs::exists(out));
  expect_nothing_written(dir);
  fs::remove_all(dir);
}

// The case: 2,000 scenarios took 1.2 s and 8,000 took 17.7 s with --svg. Eight times the
// scenarios may take eight times as long, not sixty-four.
TEST(Limits, RunOverManyScenariosIsLinear) {
  const fs::path dir = scratch("linear");
  const std::string small = many_scenarios(dir / "small.json", 500), large = many_scenarios(dir / "large.json", 4000);
  const std::vector<std::string> all = {"--svg " + (dir / "p.svg").string(), "--html " + (dir / "p.html").string(),
                                         "--format json", "--format csv"};
  for (const std::string& outputs : all) {
    const std::string common = " --backend cpu " + outputs + " -o " + (dir / "out").string();
    seconds_of("run " + small + common);  // warm the caches
    const double t_small = seconds_of("run " + small + common), t_large = seconds_of("run " + large + common);
    EXPECT_LT(t_large, 24 * std::max(t_small, 0.02)) << outputs << ": 500 scenarios " << t_small << " s, 4000 " << t_large << " s";
  }
  fs::remove_all(dir);
}

TEST(Limits, RunStopsOnCtrlCAndWritesNothing) {
  const fs::path dir = scratch("run_interrupt");
  many_scenarios(dir / "many.json", 100000);
  const Stopped r = interrupt_after("run many.json --backend cpu --svg p.svg --html p.html -o out.txt",
                                    std::chrono::milliseconds(1500), dir);
  EXPECT_EQ(r.code, 130) << r.out << r.err;
  EXPECT_LT(r.seconds_to_exit, kPromptExit);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("mlaplan: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("interrupted while "), std::string::npos) << r.err;  // reading, planning or formatting
  EXPECT_NE(r.err.find("; nothing written"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  expect_nothing_written(dir, {"many.json"});
  fs::remove_all(dir);
}

TEST(Limits, GenStopsOnCtrlCAndWritesNothing) {
  const fs::path dir = scratch("gen_interrupt");
  const Stopped r = interrupt_after("gen --workload coding-agent --batches 700000 -o out.json", std::chrono::milliseconds(1500), dir);
  EXPECT_EQ(r.code, 130) << r.out << r.err;
  EXPECT_LT(r.seconds_to_exit, kPromptExit);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("mlaplan: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("interrupted while"), std::string::npos) << r.err;
  expect_nothing_written(dir);
  fs::remove_all(dir);
}

// verify polled between cases only: one large batch ran on for minutes. At the new maximum a case
// is short, and drawing one is interrupted inside.
TEST(Limits, VerifyStopsInsideLargeRandomBatches) {
  const fs::path dir = scratch("verify_interrupt");
  const Stopped r = interrupt_after("verify --backend cpu --kernel all --max-batch-size 16384 --large-batch-size 1048576 "
                                    "--fuzz 1000000 --seed 3 --report report.json",
                                    std::chrono::milliseconds(1500), dir);
  EXPECT_EQ(r.code, 130) << r.out << r.err;
  EXPECT_LT(r.seconds_to_exit, kPromptExit);
  EXPECT_NE(r.out.find("interrupted after"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("interrupted; no report written"), std::string::npos) << r.err;
  expect_nothing_written(dir);
  fs::remove_all(dir);
}

// One scenario of B = 10^4 in 5,000 chunks: 381 MiB of tables, which the reference, the fast planner
// and the property check each walk for a second or more. The old build finished the case first.
TEST(Limits, VerifyStopsInsideOneLargeScenario) {
  const fs::path dir = scratch("verify_scenario");
  write_file(dir / "wide.json", scenario_json("wide", 10000, 1 << 20, 5000));
  const Stopped r = interrupt_after("verify wide.json --backend cpu --kernel all --report report.json",
                                    std::chrono::milliseconds(800), dir);
  EXPECT_EQ(r.code, 130) << r.out << r.err;
  EXPECT_LT(r.seconds_to_exit, kPromptExit);
  EXPECT_NE(r.out.find("interrupted after"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("interrupted; no report written"), std::string::npos) << r.err;
  expect_nothing_written(dir, {"wide.json"});
  fs::remove_all(dir);
}

TEST(Limits, SweepStopsOnCtrlCWhileFormingBatches) {
  const fs::path dir = scratch("sweep_interrupt");
  // A limit that takes the count, so forming runs until the signal.
  const Stopped r = interrupt_after("sweep --workload coding-agent --batches 100000000 --memory-limit 64GiB --no-progress "
                                    "-o out.txt",
                                    std::chrono::milliseconds(1000), dir);
  EXPECT_EQ(r.code, 130) << r.out << r.err;
  EXPECT_LT(r.seconds_to_exit, kPromptExit);
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  expect_nothing_written(dir);
  fs::remove_all(dir);
}

// One measurement of a large batch is interrupted inside, not after its --max-time.
// The measurement runs 60 s (its --max-time; 1,000 samples of 31 ms each take longer), so exit 130
// with no measurement finished, before interrupt_after's kill at 30 s, shows the stop was seen inside
// it. No bound on how fast: on a loaded two-core machine under the sanitizer, exit took 5.4 s.
TEST(Limits, BenchStopsInsideALongMeasurement) {
  const fs::path dir = scratch("bench_interrupt");
  const Stopped r = interrupt_after("bench --kernels cpu --sizes 262144 --max-time 60 --min-samples 1000 --no-progress "
                                    "-o out.txt",
                                    std::chrono::milliseconds(1500), dir);
  EXPECT_EQ(r.code, 130) << r.out << r.err;
  EXPECT_NE(r.err.find("bench: interrupted after 0 measurements"), std::string::npos) << r.err;
  expect_nothing_written(dir);
  fs::remove_all(dir);
}

}  // namespace robustness_limits_test
