// mlaplan: plan, check and profile chunked MLA prefill. Subcommands live one per file.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>

#include "cli_common.hpp"
#include "cli_suggest.hpp"
#include "commands.hpp"
#include "mlaplan/build_info.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/file_error.hpp"
#include "mlaplan/stop_request.hpp"

namespace {

std::string version_text() {
  const auto& info = mlaplan::build_info();
  std::string cuda = info.cuda ? fmt::format("CUDA {} support built in, for {}", info.cuda_version, info.cuda_architectures)
                               : std::string("no CUDA support built in (CPU planner only)");
  return fmt::format("mlaplan {}\n{}", info.version, cuda);
}

// CLI11's texts for ->needs and ->excludes ("--a requires --b", "--a excludes --b"), in the house's
// words: what is wrong and the fix.
std::string parse_error_text(const CLI::ParseError& e) {
  const std::string what = e.what();
  auto split = [&what](const std::string& word, std::string& a, std::string& b) {
    const size_t at = what.find(word);
    if (at == std::string::npos) return false;
    a = what.substr(0, at);
    b = what.substr(at + word.size());
    return true;
  };
  std::string a, b;
  if (dynamic_cast<const CLI::RequiresError*>(&e) && split(" requires ", a, b))
    return fmt::format("{}: applies only with {}; add {} or drop {}", a, b, b, a);
  if (dynamic_cast<const CLI::ExcludesError*>(&e) && split(" excludes ", a, b))
    return fmt::format("{} and {} exclude each other; drop one of them", a, b);
  // "--batches: 1 required UINT:in [1 - 1000000] missing" for `--batches=`: the option and the fix.
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && what.size() > 8 && what.compare(what.size() - 8, 8, " missing") == 0 &&
      what.find(": ") != std::string::npos)
    return fmt::format("{}: needs a value; give one after it", what.substr(0, what.find(": ")));
  return what;
}

// The help to point to: the subcommand's when the line names one (CLI11 does not say which failed).
std::string help_hint(const CLI::App& app, int argc, char** argv) {
  if (argc >= 2)
    for (const CLI::App* sub : app.get_subcommands({}))
      if (sub->get_name() == argv[1]) return fmt::format("mlaplan {} --help", sub->get_name());
  return "mlaplan --help";
}

}  // namespace

int run_mlaplan(int argc, char** argv) {
  using namespace mlaplan;
  CLI::App app{"mlaplan: plan, check and profile chunked MLA prefill (the chunk tables of mla_prefill_plan)", "mlaplan"};
  app.set_version_flag("--version", version_text, "Print the version, and whether and for which GPUs CUDA support is built in");
  app.require_subcommand(1);
  app.footer(cli::help_footer());

  cli::set_command_line(argc, argv);
  int exit_code = cli::kOk;
  cli::add_run_command(app, exit_code);
  cli::add_bench_command(app, exit_code);
  cli::add_verify_command(app, exit_code);
  cli::add_gen_command(app, exit_code);
  cli::add_sweep_command(app, exit_code);

  if (const auto unknown = cli::unknown_name_error(app, argc, argv)) {
    cli::error(*unknown);
    return cli::kBadInput;
  }
  try {
    app.parse(argc, argv);
    // The command has finished. Its outputs are committed together, only if it succeeded (exit 0,
    // or 1: a verdict, with the report saying why) and was not stopped, and only after what it
    // printed on stdout is known to have arrived; otherwise their temporaries go (OutputSet).
    if (exit_code == cli::kOk || exit_code == cli::kWrongPlan) {
      // A stop requested after the work (while writing) still means no output: exit 130, not 0.
      if (stop_requested()) throw Interrupted("interrupted");
      cli::check_stdout();
      cli::outputs().commit();  // a stop while writing into a FIFO drops everything; the renames finish
    } else {
      cli::outputs().discard();
    }
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    cli::error(fmt::format("{}; see `{}`", parse_error_text(e), help_hint(app, argc, argv)));
    return cli::kBadInput;
  } catch (const Interrupted& e) {
    cli::error(fmt::format("{}; nothing written", e.what()));
    return cli::kInterrupted;
  } catch (const InputError& e) {
    cli::error(e.what());
    return cli::kBadInput;
  } catch (const DeviceError& e) {
    cli::error(e.what());
    return cli::kDeviceFailure;
  } catch (const std::bad_alloc&) {
    cli::error("out of host memory; plan a smaller batch");
    return cli::kDeviceFailure;
  } catch (const std::exception& e) {
    cli::error(fmt::format("internal error: {}", e.what()));
    return cli::kDeviceFailure;
  }
  return exit_code;
}

int main(int argc, char** argv) {
  mlaplan::cli::guard_standard_streams();  // before anything opens a file: a closed stdout keeps fd 1
  // A reader that went away (| head) is a write error, EPIPE, reported on one line, not a silent death.
  std::signal(SIGPIPE, SIG_IGN);
  // Ctrl-C is a stop request from the start to the end, the outputs' commit included.
  mlaplan::cli::InterruptScope interrupt_scope;
  int code = run_mlaplan(argc, argv);
  mlaplan::cli::outputs().discard();  // whatever was not committed (an error, an interrupt)
  // What any path printed (--help, --version, the summaries) must have arrived, and closing stdout
  // is the last chance to hear of it.
  std::string problem = mlaplan::cli::stdout_problem();
  // close(2), not fclose: the streams' own flush at exit must still find a FILE, just an empty one.
  if (::close(STDOUT_FILENO) != 0 && errno != EBADF && problem.empty())
    problem = fmt::format("stdout: closing it failed: {}", mlaplan::file_error_cause(errno, mlaplan::FileRole::output));
  if (!problem.empty() && code == mlaplan::cli::kOk) {  // an error already said is not followed by a second line
    mlaplan::cli::error(problem);
    code = mlaplan::cli::kDeviceFailure;
  }
  return code;
}
