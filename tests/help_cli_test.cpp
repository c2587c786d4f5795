// Every --help teaches (issue 63): it ends with examples, fits a terminal, carries no range noise,
// and its examples run as shown (those that need only the project's own files).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

using mlaplan::test::has;
using mlaplan::test::lines_of;
using mlaplan::test::run_cli;
using mlaplan::test::scratch;
namespace fs = std::filesystem;

namespace {
// The example commands of a help text: the lines under "Examples:" up to the blank line, a trailing
// `\` joining the next, a note after three spaces dropped.
std::vector<std::string> examples(const std::string& help) {
  std::vector<std::string> out;
  bool in = false;
  for (const std::string& line : lines_of(help)) {
    if (line == "Examples:") {
      in = true;
      continue;
    }
    if (!in) continue;
    if (line.empty()) break;
    std::string text = line.substr(line.find_first_not_of(' '));
    if (!out.empty() && !out.back().empty() && out.back().back() == '\\') {
      out.back().pop_back();
      out.back() += text;
    } else {
      out.push_back(text);
    }
  }
  for (std::string& e : out)
    if (const size_t note = e.find("   ("); note != std::string::npos) e.resize(note);
  return out;
}
}  // namespace

TEST(Help, EverySubcommandEndsWithExamplesAndFitsATerminal) {
  for (const std::string sub : {"", "run", "bench", "verify", "gen", "sweep"}) {
    const auto r = run_cli(sub + " --help");
    ASSERT_EQ(r.code, 0) << sub << r.err;
    EXPECT_GE(examples(r.out).size(), 2u) << sub << ":\n" << r.out;
    for (const std::string& line : lines_of(r.out)) {
      EXPECT_LE(line.size(), 120u) << sub << ": " << line;
      EXPECT_FALSE(has(line, ":in [")) << sub << ": " << line;  // the range is the error's business
    }
  }
}

TEST(Help, ExamplesRunAsShown) {
  const fs::path dir = scratch("help-examples");
  fs::create_directory_symlink(MLAPLAN_SOURCE_DIR "/scenarios", dir / "scenarios");
  size_t ran = 0;
  for (const std::string sub : {"run", "gen", "sweep"}) {
    for (const std::string& e : examples(run_cli(sub + " --help").out)) {
      ASSERT_EQ(e.rfind("mlaplan " + sub + " ", 0), 0u) << e;
      // A user's own file (a trace to replay) is shown, not run: the project ships none of that name.
      bool own_file = false;
      std::istringstream words(e);
      for (std::string w, before; words >> w; before = w)
        if ((before == "--replay" || before == "--lengths") && !fs::exists(dir / w)) own_file = true;
      if (own_file) continue;
      const auto r = run_cli(e.substr(8), "cd " + dir.string() + " &&");  // e without "mlaplan "
      EXPECT_EQ(r.code, 0) << e << "\n" << r.err;
      ++ran;
    }
  }
  EXPECT_GE(ran, 9u);
  fs::remove_all(dir);
}
