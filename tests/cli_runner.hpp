// Runs the mlaplan executable for end-to-end tests, capturing exit status, stdout and stderr apart.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace mlaplan::test {

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

}  // namespace mlaplan::test
