// Plumbing shared by the subcommands: exit codes, messages, output files and common options.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "mlaplan/profile/backend.hpp"
#include "mlaplan/profile/gpu_planner.hpp"
#include "mlaplan/check/scenario.hpp"
#include "output_files.hpp"

namespace mlaplan::cli {

// Exit status, interface.md.
enum Exit : int { kOk = 0, kWrongPlan = 1, kBadInput = 2, kDeviceFailure = 3, kInterrupted = 130 };

// While alive, Ctrl-C (SIGINT) and SIGTERM request a stop (stop_request.hpp) instead of killing the
// process, so verify, bench and sweep finish the case at hand, print what they have and exit 130; a
// second signal kills as usual. Blocking reads and opens return EINTR (no SA_RESTART), so they see
// the stop too. Scopes nest: main holds one for the whole command, so the outputs' commit is
// covered, and the outermost restores the default.
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

// Writes to stderr, never throwing: a closed or full stderr is ignored, having nowhere to be reported.
void print_stderr(const std::string& text) noexcept;

// "mlaplan: note: ..." on stderr, for things a user should know that are not errors.
void note(const std::string& message);
// "mlaplan: error: ..." on stderr: one line.
void error(const std::string& message);

// Writes `content` for `path`: an empty path or "-" is stdout, written at once (a failure is exit
// 3, naming "stdout"); a file is staged in the process's OutputSet (output_files.hpp) and renamed
// into place by main once the whole command has succeeded, with all the other outputs, or removed.
// Claim the paths first (outputs().claim_output) so a bad one fails before any work.
void write_output(const std::string& path, const std::string& content);

// Option values in the option's own words (CLI11's texts say "Value 0 not in range 0.000000 to 1797...",
// and let nan through a range). Each refuses with one sentence that CLI11 prefixes with the option.
// A whole number from lo to hi, in decimal digits: no sign, exponent, fraction or clamping past 2^64 - 1.
// Use with ->transform (->check would discard the normalised text): the value is rewritten in plain
// decimal digits, so a leading zero means nothing (010 is ten, never octal).
CLI::Validator whole_number(uint64_t lo, uint64_t hi);
// A comma list of such numbers ("1,2,16"): throws InputError naming `option` and the text for an
// empty item or a bad number.
std::vector<uint64_t> whole_number_list(const std::string& text, const std::string& option, uint64_t lo, uint64_t hi);
// A finite decimal number from lo to hi (nan and inf refused); `unit` names it in the message ("seconds").
CLI::Validator real_number(double lo, double hi, const std::string& unit = "");
// One of `names`, in any case (the one rule for every enumerated value: --format JSON is json); use
// with ->transform, which replaces the value by the name as listed. `aliases` (old spelling, name)
// are accepted too and replaced by their name, but neither listed in the help nor suggested.
CLI::Validator one_of(std::vector<std::string> names, std::vector<std::pair<std::string, std::string>> aliases = {});
// The kernel names a user may give (--kernel of run, verify and bench): max-port's old name "seed".
extern const std::vector<std::pair<std::string, std::string>> kKernelAliases;
// names as a sentence, "a, b or c", for messages.
std::string choices_text(const std::vector<std::string>& names);
// Equal ignoring ASCII case.
bool iequal(const std::string& a, const std::string& b);

// The option `name` of `cmd` was given on the command line (not just left at its default).
bool given(const CLI::App& cmd, const std::string& name);
// --memory-limit SIZE (run, verify, sweep, bench, gen): the most the plan tables may take (table_bytes,
// 2 GiB by default), checked before anything is allocated. A size as --memory-budget takes it (4GiB,
// 512MiB, 2GB), at least 1 MiB.
struct MemoryLimit {
  uint64_t bytes = kDefaultMemoryLimit;
  bool given = false;
};
void add_memory_limit_option(CLI::App& cmd, MemoryLimit& limit);

// --backend auto|gpu|cpu, the same on every subcommand.
void add_backend_option(CLI::App& cmd, profile::Backend& backend);

// --backend and --kernel fast|max-port (run's GPU kernel; verify has its own --kernel).
struct BackendOptions {
  profile::Backend backend = profile::Backend::automatic;
  GpuKernel kernel = GpuKernel::fast;
};
void add_backend_options(CLI::App& cmd, BackendOptions& options);

// The scenarios of `path` that --scenario WANTED names (by name, else by index; all of them when WANTED
// is empty). Throws InputError listing the file's scenarios when none matches, and when several
// share the name.
std::vector<check::Scenario> select_scenarios(std::vector<check::Scenario> all, const std::string& wanted, const std::string& path);
// The check of --scenario NAME: refuses '' (which would otherwise select every scenario).
CLI::Validator scenario_name();

// The scenario files among PATHs: files as given, folders searched recursively for *.json in any
// case (sorted), skipping hidden files and folders (a name starting with '.'). Throws InputError for
// a missing path or a folder without scenario files (saying so when it held hidden ones only).
std::vector<std::string> scenario_files(const std::vector<std::string>& paths);

// Picks the planner and prints the fallback note, if any.
profile::PlannerChoice choose(const BackendOptions& options);

// Adds `--trace FILE.json` to `cmd` and wraps its body in a root range named after the command
// ("mlaplan run"): an NVTX range always, and with --trace a Chrome/Perfetto trace of every
// PhaseTimer phase, claimed before the body runs and staged when it returns (not when it throws,
// nor after a stop request). Usage, one line:
//   cmd->callback(traced(*cmd, [opt, &exit_code] { exit_code = run(*opt); }));
std::function<void()> traced(CLI::App& cmd, std::function<void()> body);

}  // namespace mlaplan::cli
