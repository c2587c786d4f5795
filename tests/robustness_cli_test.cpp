// Robustness of the command line: a gate that cannot pass on nothing, unknown names with the closest
// valid spelling, and Ctrl-C during the long commands (partial summary, no output file, exit 130).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli_runner.hpp"

using mlaplan::test::run_cli;
using mlaplan::test::slurp;
namespace fs = std::filesystem;

namespace {

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("mlaplan_robust_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void expect_one_error(const mlaplan::test::CliResult& r, const std::string& needle) {
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("mlaplan: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

struct Interrupted {
  int code = -1;
  double seconds_to_exit = 0;  // from the signal to the process's end
  std::string out, err;
};

// Starts mlaplan with `args`, sends SIGINT after `delay`, and waits for it to end.
Interrupted interrupt_after(const std::string& args, std::chrono::milliseconds delay, const fs::path& dir) {
  const std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string cmd = std::string("exec ") + MLAPLAN_EXE + " " + args + " >" + out + " 2>" + err;
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(delay);
  const auto sent = std::chrono::steady_clock::now();
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  Interrupted r;
  r.seconds_to_exit = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace

TEST(Gate, EmptyScenarioListsAreRefused) {
  const fs::path dir = scratch("empty");
  const std::string empty = (dir / "list.json").string();
  std::ofstream(empty) << "{\"scenarios\": []}\n";
  expect_one_error(run_cli("verify " + empty), "list.json: holds no scenario");
  expect_one_error(run_cli("verify " + empty), "--fuzz N");
  expect_one_error(run_cli("run " + empty + " --backend cpu"), "list.json: holds no scenario");
  expect_one_error(run_cli("sweep " + empty), "list.json: holds no scenario");
  expect_one_error(run_cli("verify --plan x.json " + empty), "holds no scenario");
  // One empty file among good ones still fails the gate, naming the empty one.
  expect_one_error(run_cli("verify " + std::string(MLAPLAN_SOURCE_DIR) + "/scenarios/worked-example.json " + empty),
                   "list.json");
  fs::remove_all(dir);
}

TEST(Gate, UnknownNamesGetTheClosestSpelling) {
  expect_one_error(run_cli("frob"), "unknown subcommand 'frob'");
  expect_one_error(run_cli("veriffy"), "did you mean verify?");
  expect_one_error(run_cli("swep --workload azure-conv"), "did you mean sweep?");
  expect_one_error(run_cli("run x.json --formt json"), "mlaplan run: unknown option --formt; did you mean --format?");
  expect_one_error(run_cli("sweep --worklaod coding-agent"), "did you mean --workload?");
  expect_one_error(run_cli("bench --size 1"), "did you mean --sizes?");
  const auto far = run_cli("verify --zzzzzzzzz");
  expect_one_error(far, "unknown option --zzzzzzzzz");
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;  // nothing close: no guess
  EXPECT_EQ(run_cli("run --help").code, 0);
  EXPECT_EQ(run_cli("--version").code, 0);
}

TEST(Interrupt, VerifyStopsWithAPartialSummaryAndNoReport) {
  const fs::path dir = scratch("verify");
  const std::string report = (dir / "report.json").string();
  const Interrupted r =
      interrupt_after("verify --backend cpu --fuzz 100000000 --seed 1 --report " + report, std::chrono::milliseconds(800), dir);
  EXPECT_EQ(r.code, 130) << r.out << r.err;
  EXPECT_LT(r.seconds_to_exit, 1.0);
  EXPECT_NE(r.out.find("interrupted after"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("interrupted; no report written"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(report));
  fs::remove_all(dir);
}

TEST(Interrupt, SweepStopsWithTheFinishedSettingsAndNoOutputFile) {
  const fs::path dir = scratch("sweep");
  const std::string out = (dir / "sweep.csv").string(), json = (dir / "sweep.json").string();
  const Interrupted r = interrupt_after("sweep --workload short-chat --batches 300000 --buffer-tokens 64:1048576:x2 "
                                        "--no-progress --format csv -o " + out + " --json " + json,
                                        std::chrono::milliseconds(2500), dir);
  EXPECT_EQ(r.code, 130) << r.out << r.err;
  EXPECT_LT(r.seconds_to_exit, 1.0);
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(json));
  for (const auto& e : fs::directory_iterator(dir))  // no temporary left behind either
    EXPECT_TRUE(e.path().filename() == "stdout" || e.path().filename() == "stderr") << e.path();
  fs::remove_all(dir);
}

TEST(Interrupt, BenchStopsWithTheFinishedRows) {
  const fs::path dir = scratch("bench");
  const std::string out = (dir / "bench.txt").string();
  const Interrupted r = interrupt_after("bench --kernels cpu --sizes 1:1048576:x2 --max-time 0.3 --no-progress -o " + out,
                                        std::chrono::milliseconds(1500), dir);
  EXPECT_EQ(r.code, 130) << r.out << r.err;
  EXPECT_LT(r.seconds_to_exit, 1.0);
  EXPECT_NE(r.out.find("cpu"), std::string::npos) << r.out;  // the rows measured before the signal
  EXPECT_NE(r.err.find("bench: interrupted after"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(dir);
}
