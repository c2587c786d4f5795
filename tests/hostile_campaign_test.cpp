// The hostile campaign: every case of tests/hostile/*.tsv run end to end against the contract of
// docs/interface.md. A case is one line of four tab-separated fields,
//   exit <TAB> stderr substring ("-": none) <TAB> setup ("-": none) <TAB> command
// run with /bin/sh in a fresh scratch folder, `$M` the mlaplan executable, `$S` the source tree and
// `$CAP1G` a 1 GiB address-space cap (`ulimit -v 1048576;`, empty under AddressSanitizer, whose
// shadow memory alone reserves terabytes of address space).
// Checked: the exit status; for exit 2, stderr is exactly one `mlaplan: error: ` line; the substring
// is in stderr; and a command that failed left the folder exactly as the setup made it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace fs = std::filesystem;
using mlaplan::test::slurp;

namespace {

struct HostileCase {
  std::string area;  // the file's stem
  int line = 0;
  int exit = 0;
  std::string needle, setup, command;
};

// ctest shows each case by its file and line rather than as bytes.
void PrintTo(const HostileCase& c, std::ostream* os) { *os << c.area << ".tsv:" << c.line; }

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, '\t')) fields.push_back(field);
  return fields;
}

std::vector<HostileCase> load_cases() {
  std::vector<HostileCase> cases;
  const fs::path dir = fs::path(MLAPLAN_SOURCE_DIR) / "tests" / "hostile";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".tsv") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::ifstream in(f);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (line.empty() || line[0] == '#') continue;
      const std::vector<std::string> fields = split_tabs(line);
      HostileCase c;
      c.area = f.stem().string();
      c.line = number;
      if (fields.size() != 4) {  // a malformed line is a failing case, not a silently dropped one
        c.exit = -1;
        c.command = line;
      } else {
        c.exit = std::stoi(fields[0]);
        c.needle = fields[1] == "-" ? "" : fields[1];
        c.setup = fields[2] == "-" ? "" : fields[2];
        c.command = fields[3];
      }
      cases.push_back(c);
    }
  }
  return cases;
}

// What a folder holds: each entry's type, and a regular file's bytes or a link's target.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> entries;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const fs::path rel = it->path().lexically_relative(dir);  // relative() resolves links: a loop would throw
    const fs::file_status st = it->symlink_status();
    std::string what;
    if (fs::is_symlink(st)) what = "link:" + fs::read_symlink(it->path(), ec).string();
    else if (fs::is_directory(st)) what = "dir";
    else if (fs::is_regular_file(st)) what = "file:" + slurp(it->path());
    else what = "other";
    entries[rel.string()] = what;
  }
  return entries;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

int run_shell(const fs::path& dir, const std::string& command, const fs::path& out, const fs::path& err) {
#if defined(MLAPLAN_UNDER_ASAN)  // cli_runner.hpp
  const std::string cap = "";
#else
  const std::string cap = "ulimit -v 1048576;";
#endif
  const std::string env = std::string("M=") + shell_quote(MLAPLAN_EXE) + " S=" + shell_quote(MLAPLAN_SOURCE_DIR) +
                          " CAP1G=" + shell_quote(cap);
  // timeout: a case that hangs fails instead of stalling the suite.
  const std::string cmd = "cd " + shell_quote(dir.string()) + " && " + env + " timeout -k 5 60 /bin/sh -c " +
                          shell_quote(command) + " >" + shell_quote(out.string()) + " 2>" + shell_quote(err.string());
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

size_t count_lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

class Hostile : public testing::TestWithParam<HostileCase> {};

TEST_P(Hostile, MeetsTheContract) {
  const HostileCase& c = GetParam();
  const std::string where = c.area + ".tsv:" + std::to_string(c.line) + ": " + c.command;
  ASSERT_NE(c.exit, -1) << where << "\n  (not 4 tab-separated fields)";
  const fs::path base = fs::temp_directory_path() / ("mlaplan_hostile_" + std::to_string(::getpid()) + "_" + c.area +
                                                     "_" + std::to_string(c.line));
  const fs::path dir = base / "work";
  fs::remove_all(base);
  fs::create_directories(dir);
  const fs::path out = base / "stdout", err = base / "stderr";
  if (!c.setup.empty()) ASSERT_EQ(run_shell(dir, c.setup, out, err), 0) << where << "\n  setup failed: " << slurp(err);
  const auto before = snapshot(dir);
  const int code = run_shell(dir, c.command, out, err);
  const std::string so = slurp(out), se = slurp(err);
  EXPECT_EQ(code, c.exit) << where << "\n  stdout: " << so.substr(0, 2000) << "\n  stderr: " << se.substr(0, 2000);
  if (c.exit == 2) {
    EXPECT_EQ(count_lines(se), 1u) << where << "\n  stderr: " << se.substr(0, 2000);
    EXPECT_EQ(se.rfind("mlaplan: error: ", 0), 0u) << where << "\n  stderr: " << se.substr(0, 2000);
  }
  if (!c.needle.empty()) EXPECT_NE(se.find(c.needle), std::string::npos) << where << "\n  stderr: " << se.substr(0, 2000);
  if (c.exit != 0) {
    const auto after = snapshot(dir);
    for (const auto& [name, what] : after)
      EXPECT_TRUE(before.count(name) && before.at(name) == what) << where << "\n  left behind or changed: " << name;
    for (const auto& [name, what] : before) EXPECT_TRUE(after.count(name)) << where << "\n  removed: " << name;
  }
  // Whatever the setup made read-only must still be removable.
  std::system(("chmod -R u+rwx " + shell_quote(base.string()) + " 2>/dev/null").c_str());
  fs::remove_all(base);
}

std::string case_name(const testing::TestParamInfo<HostileCase>& info) {
  std::string name = info.param.area + "_" + std::to_string(info.param.line);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Campaign, Hostile, testing::ValuesIn(load_cases()), case_name);

}  // namespace
