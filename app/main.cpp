// mlaplan: plan, check and profile chunked MLA prefill. Subcommands live one per file.
#include <fmt/format.h>

#include <sstream>

#include "mlaplan/io/text_wrap.hpp"

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
#include "mlaplan/io/file_error.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace {

std::string version_text() {
  const auto& info = mlaplan::build_info();
  std::string cuda = info.cuda ? fmt::format("CUDA {} support built in, for {}", info.cuda_version, info.cuda_architectures)
                               : std::string("no CUDA support built in (CPU planner only)");
  return fmt::format("mlaplan {}\n{}", info.version, cuda);
}

// Every option that takes a value refuses an empty one: "" would otherwise read as the option left
// out (--external "" checking the built-in planners, -o "" writing to stdout). Runs after the
// option's own checks, so those that word it themselves (--scenario '', numbers) keep their text.
void refuse_empty_values(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands({})) {
    for (CLI::Option* o : sub->get_options()) {
      if (o->get_expected_max() == 0 || !o->nonpositional()) continue;  // flags take no value; PATHs say "no such file"
      const std::string name = o->get_name();
      const std::string what = o->get_type_name().empty() ? std::string("value") : o->get_type_name();
      o->check(CLI::Validator(
          [name, what](std::string& text) -> std::string {
            if (!text.empty()) return "";
            return fmt::format("an empty value; give a {} or drop {}", what.substr(0, what.find(':')), name);
          },
          ""));
    }
  }
}

// "At Most 1 required but received 2", "The following argument was not expected: b.json", "Could
// not convert: --no-verify = banana", "A subcommand is required": CLI11's texts in the house's words.
std::string plain_parse_error(const CLI::ParseError& e, const CLI::App& app, int argc, char** argv) {
  const std::string what = e.what();
  const CLI::App* sub = nullptr;
  if (argc >= 2)
    for (const CLI::App* s : app.get_subcommands({}))
      if (s->get_name() == argv[1]) sub = s;
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands({})) names.push_back(s->get_name());
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && what.find(": At Most ") != std::string::npos) {
    const std::string option = what.substr(0, what.find(": "));
    const std::string times = what.substr(what.rfind(' ') + 1);
    return fmt::format("{}: given {}; give it once", option, times == "2" ? std::string("twice") : times + " times");
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) && what.find(": ") != std::string::npos) {
    const std::string extras = what.substr(what.find(": ") + 2);
    std::string takes = "takes no arguments besides its options";
    if (sub)
      for (const CLI::Option* o : sub->get_options())
        if (!o->nonpositional() && o->get_items_expected_max() == 1) takes = "takes one " + o->get_name() + " file";
    return fmt::format("unexpected argument{} {}: mlaplan {} {}", extras.find(' ') == std::string::npos ? "" : "s", extras,
                       sub ? sub->get_name() : std::string("SUBCOMMAND"), takes);
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e) && what.rfind("Could not convert: ", 0) == 0 &&
      what.find(" = ") != std::string::npos) {
    const std::string option = what.substr(19, what.find(" = ") - 19);
    const std::string value = what.substr(what.find(" = ") + 3);
    const CLI::Option* o = sub ? sub->get_option_no_throw(option) : nullptr;
    if (o && o->get_expected_max() == 0) return fmt::format("{}: a flag takes no value; drop ={}", option, value);
    return fmt::format("{}: cannot read '{}' as its value", option, value);
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e) && what == "A subcommand is required")
    return fmt::format("a subcommand is required: {}", fmt::join(names, ", "));
  return what;
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
  return "";
}

// The help to point to: the subcommand's when the line names one (CLI11 does not say which failed).
std::string help_hint(const CLI::App& app, int argc, char** argv) {
  if (argc >= 2)
    for (const CLI::App* sub : app.get_subcommands({}))
      if (sub->get_name() == argv[1]) return fmt::format("mlaplan {} --help", sub->get_name());
  return "mlaplan --help";
}

// --help within a terminal: each option's text broken into lines under its column (CLI11 2.1 writes
// it as one line, up to 700 characters).
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_desc(const CLI::Option* opt) const override {
    return mlaplan::io::wrap_lines(CLI::Formatter::make_option_desc(opt), kHelpWidth - get_column_width(), 0);
  }
  // The subcommands' one-line summaries in the main help, broken as the options' text is.
  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             mlaplan::io::wrap_lines(sub->get_description(), kHelpWidth - get_column_width(), 0),
                             get_column_width());
    return out.str();
  }
  // No "Excludes: --seed --max-batch-size ..." lists (one ran to 158 columns): a line that combines
  // them is refused naming both options.
  std::string make_option_opts(const CLI::Option* opt) const override {
    std::string out = CLI::Formatter::make_option_opts(opt);
    if (const size_t at = out.find(" Excludes:"); at != std::string::npos) out.erase(at);
    return out;
  }
  std::string make_description(const CLI::App* app) const override {
    return mlaplan::io::wrap_lines(CLI::Formatter::make_description(app), kHelpWidth, 0);
  }
  static constexpr size_t kHelpWidth = 110;
};

}  // namespace

int run_mlaplan(int argc, char** argv) {
  using namespace mlaplan;
  CLI::App app{"mlaplan: plan, check and profile chunked MLA prefill (the chunk tables of mla_prefill_plan)", "mlaplan"};
  app.set_version_flag("--version", version_text, "Print the version, and whether and for which GPUs CUDA support is built in");
  app.require_subcommand(1);
  app.footer(cli::help_footer(
      "  mlaplan run scenarios/worked-example.json --policy engines --model deepseek-v3 --tp 8\n"
      "  mlaplan sweep --gpu h100 --model deepseek-v3 --tp 8 --workload coding-agent --policy vllm --recommend "
      "--objective time\n"
      "  mlaplan verify scenarios/ --fuzz 10000 --seed 1"));
  // Set before the subcommands are added: each copies its parent's formatter.
  app.formatter(std::make_shared<HelpFormatter>());

  cli::set_command_line(argc, argv);
  int exit_code = cli::kOk;
  cli::add_run_command(app, exit_code);
  cli::add_bench_command(app, exit_code);
  cli::add_verify_command(app, exit_code);
  cli::add_gen_command(app, exit_code);
  cli::add_sweep_command(app, exit_code);
  refuse_empty_values(app);

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
      if (profile::stop_requested()) throw Interrupted("interrupted");
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
    std::string text = parse_error_text(e);
    if (text.empty()) text = plain_parse_error(e, app, argc, argv);
    cli::error(fmt::format("{}; see `{}`", text, help_hint(app, argc, argv)));
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
    problem = fmt::format("stdout: closing it failed: {}", mlaplan::io::file_error_cause(errno, mlaplan::io::FileRole::output));
  if (!problem.empty() && code == mlaplan::cli::kOk) {  // an error already said is not followed by a second line
    mlaplan::cli::error(problem);
    code = mlaplan::cli::kDeviceFailure;
  }
  return code;
}
