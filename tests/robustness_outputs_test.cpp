// Outputs of every subcommand: every write checked (a full device, a closed stdout), no
// output onto an input or onto another output, all outputs or none, symlinks written through, no
// trace on an interrupt, and file-access messages that say the real cause.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "cli_runner.hpp"

// The file's own namespace, in a unity build too: its expect_one_error takes the exit status before the text.
namespace robustness_outputs_test {

using mlaplan::test::CliResult;
using mlaplan::test::run_cli;
using mlaplan::test::slurp;
namespace fs = std::filesystem;
using mlaplan::test::lines;
using mlaplan::test::scratch;
using mlaplan::test::write;
using mlaplan::test::interrupt_after;
using mlaplan::test::Interrupted;

namespace {

const std::string kWorked = std::string(MLAPLAN_SOURCE_DIR) + "/scenarios/worked-example.json";
const std::string kRun = "run " + kWorked + " --backend cpu";

void expect_one_error(const CliResult& r, int code, const std::string& needle) {
  EXPECT_EQ(r.code, code) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("mlaplan: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

// As expect_one_error, where notes may come first (gen's summary, printed before the commit fails).
void expect_error_last(const CliResult& r, int code, const std::string& needle) {
  EXPECT_EQ(r.code, code) << r.err;
  const size_t last = r.err.rfind("mlaplan: error: ");
  ASSERT_NE(last, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("mlaplan: error: "), last) << r.err;  // one error line
  EXPECT_EQ(r.err.find('\n', last), r.err.size() - 1) << r.err;  // and it is the last line
  EXPECT_NE(r.err.find(needle, last), std::string::npos) << r.err;
}

// `args` then `redirect` (shell words such as ">/dev/full" or ">&-") through /bin/sh; stdout is not
// captured (the redirect decides where it goes).
CliResult run_sh(const std::string& args, const std::string& redirect) {
  const fs::path err = fs::temp_directory_path() / ("mlaplan_outputs_err_" + std::to_string(::getpid()));
  const std::string cmd = std::string(MLAPLAN_EXE) + " " + args + " " + redirect + " 2>" + err.string();
  const int status = std::system(("/bin/sh -c '" + cmd + "'").c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = slurp(err);
  fs::remove(err);
  return r;
}

// The names in `dir` (temporaries included: a failed command leaves none).
std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

std::string a_lengths_csv(const fs::path& dir) {
  const fs::path p = dir / "lengths.csv";
  write(p, "cached_tokens,new_tokens\n0,100\n50,200\n10,30\n");
  return p.string();
}

}  // namespace

// ---- every write checked -------------------------------------------------------------------------

TEST(Outputs, AFullDeviceIsAnErrorNotASilentLoss) {
  expect_one_error(run_cli(kRun + " -o /dev/full"), 3, "/dev/full: writing the output failed: no space left");
  expect_one_error(run_sh(kRun, ">/dev/full"), 3, "stdout: writing the output failed: no space left");
  expect_one_error(run_cli("verify " + kWorked + " --backend cpu --report /dev/full"), 3, "/dev/full");
  expect_error_last(run_cli("gen --workload short-chat -o /dev/full"), 3, "/dev/full");
  // What the subcommands print with fmt::print: verify's summary, bench's table, sweep's table.
  expect_one_error(run_sh("verify " + kWorked + " --backend cpu", ">/dev/full"), 3, "stdout:");
  expect_one_error(run_sh("bench --kernels cpu --sizes 1 --max-time 0.01 --min-samples 3 --no-progress", ">/dev/full"), 3,
                   "stdout:");
  expect_one_error(run_sh("sweep --workload short-chat --batches 20 --buffer-tokens 4096", ">/dev/full"), 3, "stdout:");
  expect_one_error(run_sh("run --help", ">/dev/full"), 3, "stdout:");
}

TEST(Outputs, AClosedStdoutIsAnError) {
  expect_one_error(run_sh(kRun, ">&-"), 3, "stdout: writing the output failed: the stream is closed");
  expect_one_error(run_sh("sweep --workload short-chat --batches 20 --buffer-tokens 4096", ">&-"), 3, "stdout:");
  // The table was lost, so the JSON beside it is not written either; and the file opened for it
  // must not have taken descriptor 1 and received the table.
  const fs::path dir = scratch("closed");
  const std::string json = (dir / "s.json").string();
  expect_one_error(run_sh("sweep --workload short-chat --batches 20 --buffer-tokens 4096 --json " + json, ">&-"), 3, "stdout:");
  EXPECT_TRUE(names_in(dir).empty());
  // With -o, nothing goes to stdout: a closed stdout is then no problem.
  const std::string out = (dir / "o.txt").string();
  const CliResult ok = run_sh(kRun + " -o " + out, ">&-");
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(slurp(out).find("chunk"), std::string::npos);
  fs::remove_all(dir);
}

// ---- no output onto an input, no two outputs onto one file ---------------------------------------

TEST(Outputs, AnOutputThatIsAnInputIsRefusedBeforeAnyWork) {
  const fs::path dir = scratch("same");
  const fs::path same = dir / "same.json";
  fs::copy_file(kWorked, same);
  const std::string original = slurp(same);
  fs::create_symlink(same, dir / "link.json");
  fs::create_hard_link(same, dir / "hard.json");
  const std::string s = same.string();
  for (const std::string out : {s, (dir / "." / "same.json").string(), (dir / "link.json").string(), (dir / "hard.json").string()}) {
    expect_one_error(run_cli("run " + s + " --backend cpu -o " + out), 2, "writing it would destroy the input");
    for (const char* option : {"--trace", "--svg", "--html"})
      expect_one_error(run_cli("run " + s + " --backend cpu -o /dev/null " + option + " " + out), 2, option);
  }
  expect_one_error(run_cli("verify " + s + " --backend cpu --report " + s), 2, "--report");
  expect_one_error(run_cli("verify " + dir.string() + " --backend cpu --junit " + s), 2, "--junit");
  expect_one_error(run_cli("verify --plan " + s + " " + kWorked + " --report " + s), 2, "the --plan file");
  expect_one_error(run_cli("sweep " + s + " -o " + s), 2, "a scenario file swept");
  expect_one_error(run_cli("sweep " + dir.string() + " --json " + (dir / "link.json").string()), 2, "--json");
  const std::string csv = a_lengths_csv(dir);
  const std::string csv_before = slurp(csv);
  expect_one_error(run_cli("gen --lengths " + csv + " -o " + csv), 2, "the --lengths file");
  expect_one_error(run_cli("sweep --lengths " + csv + " --batches 5 --svg " + csv), 2, "the --lengths file");
  expect_one_error(run_cli("run " + s + " --backend cpu --trace " + csv + " --model-config " + csv), 2, "--model-config");
  EXPECT_EQ(slurp(same), original);
  EXPECT_EQ(slurp(csv), csv_before);
  fs::remove_all(dir);
}

TEST(Outputs, TwoOutputsToOneFileAreRefused) {
  const fs::path dir = scratch("twice");
  const std::string x = (dir / "x").string();
  expect_one_error(run_cli(kRun + " --trace " + x + " -o " + x), 2, "one would overwrite the other");
  expect_one_error(run_cli(kRun + " --svg " + x + " --html " + (dir / "." / "x").string()), 2, "--html");
  expect_one_error(run_cli("bench --kernels cpu --sizes 1 --max-time 0.01 -o " + x + " --json " + x), 2, "--json");
  expect_one_error(run_cli("verify " + kWorked + " --backend cpu --report " + x + " --junit " + x), 2, "--junit");
  expect_one_error(run_cli("sweep --workload short-chat --batches 5 --json " + x + " --html " + x), 2, "--html");
  EXPECT_TRUE(names_in(dir).empty());
  // /dev/null takes any number of outputs, and stdout is not a file.
  const CliResult ok = run_cli(kRun + " -o /dev/null --svg /dev/null --trace /dev/null");
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(run_cli(kRun + " -o - --svg /dev/null").code, 0);
  fs::remove_all(dir);
}

// ---- all outputs or none ---------------------------------------------------------------------------

TEST(Outputs, OneBadPathLeavesNoOtherOutputBehind) {
  const fs::path dir = scratch("partial");
  const std::string ok = (dir / "ok").string(), bad = (dir / "nodir" / "x").string();
  expect_one_error(run_cli(kRun + " -o " + ok + " --trace " + bad), 2, "check that its folder exists");
  expect_one_error(run_cli(kRun + " -o " + bad + " --svg " + ok), 2, "check that its folder exists");
  expect_one_error(run_cli("bench --kernels cpu --sizes 1 --max-time 0.01 -o " + ok + " --json " + bad), 2, "nodir");
  expect_one_error(run_cli("verify " + kWorked + " --backend cpu --report " + ok + " --junit " + bad), 2, "nodir");
  expect_one_error(run_cli("sweep --workload short-chat --batches 5 -o " + ok + " --svg " + bad), 2, "nodir");
  // A failure after the work (stdout full) commits none of the files either.
  expect_one_error(run_sh(kRun + " --svg " + ok + " --trace " + ok + ".trace", ">/dev/full"), 3, "stdout");
  expect_one_error(run_cli(kRun + " --svg " + ok + " -o /dev/full"), 3, "/dev/full");
  EXPECT_TRUE(names_in(dir).empty()) << *names_in(dir).begin();
  fs::remove_all(dir);
}

// ---- symlinks are written through ----------------------------------------------------------------

TEST(Outputs, ASymlinkIsWrittenThroughAndStays) {
  const fs::path dir = scratch("link");
  fs::create_directories(dir / "real");
  write(dir / "real" / "target.txt", "old");
  fs::create_symlink("real/target.txt", dir / "link");
  fs::create_symlink("real/new.txt", dir / "dangling");
  const CliResult r = run_cli(kRun + " -o " + (dir / "link").string() + " --svg " + (dir / "dangling").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_TRUE(fs::is_symlink(dir / "dangling"));
  EXPECT_NE(slurp(dir / "real" / "target.txt").find("chunk"), std::string::npos);
  EXPECT_NE(slurp(dir / "real" / "new.txt").find("<svg"), std::string::npos);
  EXPECT_EQ(names_in(dir / "real"), (std::set<std::string>{"new.txt", "target.txt"}));  // no temporary left
  // A loop is refused, with its cause.
  fs::create_symlink("loop2", dir / "loop1");
  fs::create_symlink("loop1", dir / "loop2");
  expect_one_error(run_cli(kRun + " -o " + (dir / "loop1").string()), 2, "symbolic links");
  EXPECT_TRUE(fs::is_symlink(dir / "loop1"));
  fs::remove_all(dir);
}

// /dev/stdout is a link into /proc; what it names (here the file stdout goes to) is written into, not
// replaced by a rename (which, as root, would have replaced /dev/stdout itself). A FIFO likewise.
TEST(Outputs, DevicesAndPipesAreWrittenInto) {
  const CliResult r = run_cli(kRun + " -o /dev/stdout --svg /dev/stdout");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("chunk"), std::string::npos);
  EXPECT_NE(r.out.find("<svg"), std::string::npos);
  EXPECT_TRUE(fs::is_symlink("/dev/stdout"));
  const fs::path dir = scratch("fifo");
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = slurp(fifo); });
  EXPECT_EQ(run_cli(kRun + " -o " + fifo.string()).code, 0);
  reader.join();
  EXPECT_NE(got.find("chunk"), std::string::npos);
  fs::remove_all(dir);
}

// ---- interrupts and traces -------------------------------------------------------------------------

namespace {

void expect_no_trace(const std::string& args, std::chrono::milliseconds delay, const std::string& name) {
  const fs::path dir = scratch("interrupt_" + name);
  const Interrupted r = interrupt_after(args + " --trace " + (dir / "t.json").string(), delay, dir);
  EXPECT_EQ(r.code, 130) << r.out << r.err;
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"stderr", "stdout"}));  // no trace, no temporary
  fs::remove_all(dir);
}

}  // namespace

TEST(Outputs, AnInterruptedCommandWritesNoTrace) {
  expect_no_trace("verify --backend cpu --fuzz 100000000 --seed 1", std::chrono::milliseconds(800), "verify");
  expect_no_trace("bench --kernels cpu --sizes 1:65536:x2 --max-time 0.3 --no-progress", std::chrono::milliseconds(1500),
                  "bench");
  expect_no_trace("sweep --workload short-chat --batches 300000 --buffer-tokens 64:1048576:x2 --no-progress",
                  std::chrono::milliseconds(2500), "sweep");
}

// ---- messages for file access ----------------------------------------------------------------------

TEST(Outputs, InputErrorsSayTheRealCause) {
  const fs::path dir = scratch("inputs");
  write(dir / "file", "x");
  fs::create_symlink("loop2", dir / "loop1");
  fs::create_symlink("loop1", dir / "loop2");
  const std::string under_file = (dir / "file" / "x.json").string(), loop = (dir / "loop1").string();
  const std::string long_name = (dir / std::string(300, 'n')).string();
  expect_one_error(run_cli("run " + under_file), 2, "a part of the path is a file, not a folder");
  expect_one_error(run_cli("run " + loop), 2, "too many levels of symbolic links");
  expect_one_error(run_cli("run " + long_name), 2, "the name is too long");
  expect_one_error(run_cli("gen --lengths " + loop), 2, "too many levels of symbolic links");
  expect_one_error(run_cli(kRun + " --model-config " + loop), 2, "too many levels of symbolic links");
  expect_one_error(run_cli("verify --plan " + loop + " " + kWorked), 2, "too many levels of symbolic links");
  expect_one_error(run_cli("verify " + loop), 2, "too many levels of symbolic links");
  expect_one_error(run_cli("sweep " + long_name), 2, "the name is too long");
  // Inside a folder verify walks: a *.json entry that cannot be read is refused, not skipped.
  fs::create_directories(dir / "suite");
  fs::copy_file(kWorked, dir / "suite" / "a.json");
  fs::create_symlink("b.json", dir / "suite" / "b.json");
  expect_one_error(run_cli("verify --backend cpu " + (dir / "suite").string()), 2, "b.json: cannot read it: too many levels");
  fs::remove_all(dir);
}

TEST(Outputs, OutputErrorsSayTheRealCause) {
  const fs::path dir = scratch("outputs");
  write(dir / "file", "x");
  expect_one_error(run_cli(kRun + " -o " + (dir / "file" / "out.txt").string()), 2, "a part of the path is a file, not a folder");
  expect_one_error(run_cli(kRun + " --trace " + (dir / std::string(300, 't')).string()), 2, "the name is too long");
  expect_one_error(run_cli("gen --workload short-chat -o " + dir.string()), 2, "is a folder");
  EXPECT_EQ(names_in(dir), std::set<std::string>{"file"});
  fs::remove_all(dir);
}

TEST(Outputs, PermissionErrorsSaySo) {
  // root ignores file permissions, so a read-only folder proves nothing there.
  if (::geteuid() == 0) GTEST_SKIP() << "running as root, which ignores permissions";
  const fs::path dir = scratch("perm");
  fs::create_directories(dir / "ro");
  fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  expect_one_error(run_cli(kRun + " -o " + (dir / "ro" / "out.txt").string()), 2, "permission denied");
  fs::permissions(dir / "ro", fs::perms::owner_all);
  fs::remove_all(dir);
}

}  // namespace robustness_outputs_test
