// Plumbing shared by the subcommands: exit codes, messages, output files and common options.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "mlaplan/backend.hpp"
#include "mlaplan/gpu_planner.hpp"
#include "mlaplan/scenario.hpp"

namespace mlaplan::cli {

// Exit status, interface.md.
enum Exit : int { kOk = 0, kWrongPlan = 1, kBadInput = 2, kDeviceFailure = 3, kInterrupted = 130 };

// While alive, Ctrl-C (SIGINT) and SIGTERM request a stop (stop_request.hpp) instead of killing the
// process, so verify, bench and sweep finish the case at hand, print what they have and exit 130; a
// second signal kills as usual.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

// The exit statuses and the pointer to subcommand help, at the end of every --help; a subcommand
// with examples puts them before it.
std::string help_footer(const std::string& examples = "");

// The command line as typed (main records it), shell-quoted where needed: reports show what made them.
void set_command_line(int argc, char** argv);
const std::string& command_line();

// "mlaplan: note: ..." on stderr, for things a user should know that are not errors.
void note(const std::string& message);
// "mlaplan: error: ..." on stderr: one line.
void error(const std::string& message);

// Writes `content` to `path` atomically (a temporary beside it, then rename), so a failed run never
// leaves a partial file; an empty path or "-" means stdout. A path that exists and is not a regular
// file (/dev/null, a FIFO) is written into, never replaced.
void write_output(const std::string& path, const std::string& content);

// --memory-limit SIZE (run, verify, sweep, bench, gen): the most the plan tables may take (table_bytes,
// 2 GiB by default), checked before anything is allocated. A size as --memory-budget takes it (4GiB,
// 512MiB, 2GB), at least 1 MiB.
struct MemoryLimit {
  uint64_t bytes = kDefaultMemoryLimit;
  bool given = false;
};
void add_memory_limit_option(CLI::App& cmd, MemoryLimit& limit);

// --backend auto|gpu|cpu, the same on every subcommand.
void add_backend_option(CLI::App& cmd, Backend& backend);

// --backend and --kernel seed|fast (run's GPU kernel; verify has its own --kernel).
struct BackendOptions {
  Backend backend = Backend::automatic;
  GpuKernel kernel = GpuKernel::fast;
};
void add_backend_options(CLI::App& cmd, BackendOptions& options);

// The scenarios of `path` that --scenario WANTED names (by name or index; all of them when WANTED
// is empty). Throws InputError listing the file's scenarios when none matches.
std::vector<Scenario> select_scenarios(std::vector<Scenario> all, const std::string& wanted, const std::string& path);

// The scenario files among PATHs: files as given, folders searched recursively for *.json (sorted).
// Throws InputError for a missing path or a folder without scenario files.
std::vector<std::string> scenario_files(const std::vector<std::string>& paths);

// Picks the planner and prints the fallback note, if any.
PlannerChoice choose(const BackendOptions& options);

// Adds `--trace FILE.json` to `cmd` and wraps its body in a root range named after the command
// ("mlaplan run"): an NVTX range always, and with --trace a Chrome/Perfetto trace of every
// PhaseTimer phase, written when the body returns (not when it throws). Usage, one line:
//   cmd->callback(traced(*cmd, [opt, &exit_code] { exit_code = run(*opt); }));
std::function<void()> traced(CLI::App& cmd, std::function<void()> body);

}  // namespace mlaplan::cli
