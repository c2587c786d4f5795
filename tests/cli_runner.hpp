// Runs the mlaplan executable for end-to-end tests, capturing exit status, stdout and stderr apart
// (run_cli) or interrupting it (interrupt_after), and the helpers the end-to-end tests share.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <thread>

namespace mlaplan::test {

inline const std::string kScenarios = MLAPLAN_SOURCE_DIR "/scenarios";
inline const std::string kData = MLAPLAN_SOURCE_DIR "/tests/data";

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `args` is appended to the executable's path as shell words; extra environment goes in `env`.
inline CliResult run_cli(const std::string& args, const std::string& env = "") {
  static int counter = 0;
  const auto base = std::filesystem::temp_directory_path() /
                    ("mlaplan_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  const std::string out = base.string() + ".out", err = base.string() + ".err";
  const std::string cmd = env + (env.empty() ? "" : " ") + MLAPLAN_EXE + std::string(" ") + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

inline size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// The haystack with each wrapped line joined: a newline and the indentation of the continuation
// after it as one space, so that a phrase the 120-column output wrapped (io::wrap_lines) is still
// found; a newline before a line that starts in column 0 stays (a line's end).
inline std::string unwrapped(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n' || i + 1 >= text.size() || text[i + 1] != ' ') {
      out += text[i];
      continue;
    }
    out += ' ';
    while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
  }
  return out;
}
inline bool has(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos || unwrapped(haystack).find(needle) != std::string::npos;
}

inline void write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// The lines of a command's output, without their newlines.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A fresh, empty folder for a test's files.
inline std::filesystem::path scratch(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path p = fs::temp_directory_path() / ("mlaplan_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

#ifdef MLAPLAN_COSTS_FROM_BIN
// An install of the executable: <prefix>/bin/mlaplan, a copy, whose --gpu finds the cost files under
// <prefix>/share/mlaplan/costs before the source tree's shipped ones (gpu_options.cpp's cost_roots).
// costs_dir(prefix, gpu): that folder for the GPU, made; run_installed: `mlaplan args` by the copy.
inline std::filesystem::path install_prefix(const std::string& name) {
  const std::filesystem::path root = scratch(name);
  std::filesystem::create_directories(root / "bin");
  std::filesystem::copy_file(MLAPLAN_EXE, root / "bin" / "mlaplan");
  return root;
}
inline std::filesystem::path costs_dir(const std::filesystem::path& root, const std::string& gpu) {
  const std::filesystem::path dir = (root / "bin" / MLAPLAN_COSTS_FROM_BIN / gpu).lexically_normal();
  std::filesystem::create_directories(dir);
  return dir;
}
inline CliResult run_installed(const std::filesystem::path& root, const std::string& args) {
  return run_cli(args, "run_copy() { shift; exec '" + (root / "bin" / "mlaplan").string() + "' \"$@\"; }; run_copy");
}
#endif

// `mlaplan args` exits 2 with exactly one line, "mlaplan: error: ...", that holds `needle`.
inline void expect_bad_input(const std::string& args, const std::string& needle) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1u) << args << "\n" << r.err;
  EXPECT_EQ(r.err.rfind("mlaplan: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
}

struct Interrupted {
  int code = -1;
  double seconds_to_exit = 0;  // from the signal to the process's end
  std::string out, err;
};

// How soon after the signal an interrupted command must have exited: the unit of work in flight
// finishes first. Generous, since CI runs the tests two at a time on two cores (a parallel build
// stretched one to 1.4 s); the commands interrupted would run for many seconds more otherwise.
// Twice that under AddressSanitizer, whose instrumented planners look at the stop request less often.
// (gcc says ASan with __SANITIZE_ADDRESS__, clang with __has_feature.)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MLAPLAN_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(MLAPLAN_UNDER_ASAN)
#define MLAPLAN_UNDER_ASAN 1
#endif
#if defined(MLAPLAN_UNDER_ASAN)
constexpr double kPromptExit = 5.0;
#else
constexpr double kPromptExit = 2.5;
#endif

// Starts mlaplan with `args`, its streams in `dir`, sends SIGINT after `delay`, and waits for it to end.
// `shell_prefix` runs in the same shell first (`cd DIR && ulimit -v N; `).
inline Interrupted interrupt_after(const std::string& args, std::chrono::milliseconds delay, const std::filesystem::path& dir,
                                   const std::string& shell_prefix = "") {
  const std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string cmd = shell_prefix + "exec " + MLAPLAN_EXE + " " + args + " >" + out + " 2>" + err;
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(delay);
  const auto sent = std::chrono::steady_clock::now();
  ::kill(pid, SIGINT);
  int status = 0;
  // A build that ignores SIGINT would run on for minutes: give it 30 s, then end it, so its exit
  // status is SIGKILL's and not 130 (and a seconds_to_exit check fails it too).
  for (int waited = 0; ::waitpid(pid, &status, WNOHANG) == 0; ++waited) {
    if (waited == 600) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Interrupted r;
  r.seconds_to_exit = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace mlaplan::test
