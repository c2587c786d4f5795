#include "cli_common.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/io/file_error.hpp"
#include "output_files.hpp"
#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/profile/phase_timer.hpp"
#include "mlaplan/io/printable.hpp"
#include "mlaplan/profile/stop_request.hpp"
#include "mlaplan/profile/trace_recorder.hpp"

namespace mlaplan::cli {

namespace {

void on_interrupt(int) { profile::request_stop(); }

int scope_depth = 0;  // scopes nest (main's, a subcommand's): the outermost installs and restores

void install(void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  // No SA_RESTART: a read or open that blocks (a FIFO with no writer, a pipe that never ends) returns
  // EINTR, so its loop sees the stop; SA_RESETHAND: the next signal kills.
  action.sa_flags = handler == SIG_DFL ? 0 : SA_RESETHAND;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace

InterruptScope::InterruptScope() {
  if (scope_depth++ > 0) return;
  profile::clear_stop_request();
  install(on_interrupt);
}

InterruptScope::~InterruptScope() {
  if (--scope_depth == 0) install(SIG_DFL);
}

namespace {

// Messages quote user input (names, paths, CSV cells): control characters are shown escaped and
// very long messages clipped, so an error stays one readable line and cannot drive the terminal.
std::string one_line(const std::string& message) { return io::printable_line(message); }

}  // namespace

namespace {
std::string& recorded_command_line() {
  static std::string line;
  return line;
}
}  // namespace

void set_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    std::string arg = i == 0 ? "mlaplan" : argv[i];  // not the path it was started from
    const bool plain = !arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "0123456789-_=.,/:+@%") == std::string::npos;
    if (!plain) {
      std::string quoted = "'";
      for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      arg = quoted + "'";
    }
    line += (i ? " " : "") + arg;
  }
  recorded_command_line() = line;
}

const std::string& command_line() { return recorded_command_line(); }

std::string help_footer(const std::string& examples) {
  return (examples.empty() ? "" : "Examples:\n" + examples + "\n\n") +
         "Exit status: 0 ok, 1 a plan was wrong, 2 bad usage or input (an infeasible batch included), 3 device failure,\n"
         "130 interrupted (verify, bench and sweep print what finished).\n"
         "Run `mlaplan SUBCOMMAND --help` for a subcommand's options.";
}

void print_stderr(const std::string& text) noexcept {
  // Nowhere is left to report a failed write to stderr (2>&-, 2>/dev/full): it must not end the
  // command, as fmt::print's exception would.
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  std::clearerr(stderr);
}

void note(const std::string& message) { print_stderr(fmt::format("mlaplan: note: {}\n", one_line(message))); }

void error(const std::string& message) { print_stderr(fmt::format("mlaplan: error: {}\n", one_line(message))); }

void write_output(const std::string& path, const std::string& content) {
  if (path.empty() || path == "-") return write_stdout(content);
  outputs().stage(path, content);  // main renames it into place once the whole command has succeeded
}

namespace {

// Bounds as a person writes them: 600, 0.001, 86400 (CLI11 printed 600.000000).
// Shortest exact form: 3600000 rather than {:g}'s 3.6e+06.
std::string number_text(double v) { return fmt::format("{}", v); }

}  // namespace

CLI::Validator whole_number(uint64_t lo, uint64_t hi) {
  auto check = [lo, hi](std::string& text) -> std::string {
    const std::string range = fmt::format("give a whole number from {} to {}", lo, hi);
    if (text.empty()) return "no value; " + range;
    if (text.find_first_not_of("0123456789") != std::string::npos) {
      // 1e3 or 64.0: say how to write it rather than only that it is wrong.
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      const bool decimal = text.find_first_not_of("0123456789.eE+") == std::string::npos && text[0] != '+';
      if (decimal && end && *end == '\0' && std::isfinite(v) && v == std::floor(v) && v < 1e19)
        return fmt::format("{} is not written in digits; {} (e.g. {:.0f})", text, range, v);
      return fmt::format("{} is not a whole number; {}", text, range);
    }
    uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc::result_out_of_range || ptr != text.data() + text.size() || v < lo || v > hi)
      return fmt::format("{} is out of range; {}", text, range);
    // The value in plain digits: CLI11's conversion would read 010 as octal (8) and refuse 09.
    text = std::to_string(v);
    return "";
  };
  return CLI::Validator(check, "");  // the range is in the error, not in every --help line
}

std::vector<uint64_t> whole_number_list(const std::string& text, const std::string& option, uint64_t lo, uint64_t hi) {
  const CLI::Validator item = whole_number(lo, hi);
  std::vector<uint64_t> values;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string piece = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    // An empty item (",", "1,,2", "1,") is a typo, not a value to skip.
    if (piece.empty())
      throw InputError(fmt::format("{}: '{}' has an empty item (two commas in a row, or one at an end); write e.g. 1,2,16",
                                   option, text));
    std::string checked = piece;
    const std::string problem = CLI::Validator(item)(checked);
    if (!problem.empty()) throw InputError(fmt::format("{}: '{}': {}", option, text, problem));
    values.push_back(std::stoull(checked));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return values;
}

CLI::Validator real_number(double lo, double hi, const std::string& unit) {
  auto check = [lo, hi, unit](std::string& text) -> std::string {
    const std::string range =
        fmt::format("give a number{} from {} to {}", unit.empty() ? "" : " of " + unit, number_text(lo), number_text(hi));
    // Decimal digits, a point and an exponent only: strtod alone would also take nan, inf and hex.
    char* end = nullptr;
    const double v = text.find_first_not_of("0123456789.eE+-") == std::string::npos && !text.empty()
                         ? std::strtod(text.c_str(), &end)
                         : std::nan("");
    if (!end || *end != '\0' || !std::isfinite(v)) return fmt::format("{} is not a number; {}", text, range);
    if (v < lo || v > hi) return fmt::format("{} is out of range; {}", text, range);
    return "";
  };
  return CLI::Validator(check, "");
}

bool iequal(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

std::string choices_text(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

const std::vector<std::pair<std::string, std::string>> kKernelAliases = {{"seed", "max-port"}};

CLI::Validator one_of(std::vector<std::string> names, std::vector<std::pair<std::string, std::string>> aliases) {
  const std::string description = fmt::format("{{{}}}", fmt::join(names, ","));
  auto check = [names, aliases](std::string& text) -> std::string {
    for (const std::string& n : names) {
      if (iequal(n, text)) {
        text = n;
        return "";
      }
    }
    for (const auto& [alias, name] : aliases) {
      if (iequal(alias, text)) {
        text = name;
        return "";
      }
    }
    return fmt::format("'{}' is not one of {}", text, choices_text(names));
  };
  return CLI::Validator(check, description);
}

bool given(const CLI::App& cmd, const std::string& name) { return cmd.get_option(name)->count() > 0; }

void add_memory_limit_option(CLI::App& cmd, MemoryLimit& limit) {
  cmd.add_option_function<std::string>(
         "--memory-limit",
         [&limit](const std::string& v) {
           constexpr uint64_t kLeast = uint64_t{1} << 20;
           const uint64_t bytes = sweeps::parse_byte_size(v, "--memory-limit");
           if (bytes < kLeast)
             throw InputError(fmt::format("--memory-limit {}: below the least of {}; give e.g. 512MiB or 4GiB", v,
                                          io::format_bytes(kLeast)));
           limit.bytes = bytes;
           limit.given = true;
         },
         "Most memory the plan tables may take (8 bytes per chunk and column: 8 x max_chunks x (B+1) per batch); "
         "a batch or option past it is refused before anything is allocated. E.g. 512MiB, 8GiB")
      ->type_name("SIZE")
      ->default_str("2GiB");
}

void add_backend_option(CLI::App& cmd, profile::Backend& backend) {
  cmd.add_option_function<std::string>(
         "--backend",
         [&backend](const std::string& v) { backend = v == "cpu" ? profile::Backend::cpu : v == "gpu" ? profile::Backend::gpu : profile::Backend::automatic; },
         "Where to plan: auto (the GPU when one is usable, else the CPU, saying so), gpu or cpu")
      ->transform(one_of({"auto", "gpu", "cpu"}))
      ->default_str("auto");
}

void add_backend_options(CLI::App& cmd, BackendOptions& options) {
  add_backend_option(cmd, options.backend);
  cmd.add_option_function<std::string>(
         "--kernel", [&options](const std::string& v) { options.kernel = *gpu_kernel_named(v); },
         "Planner of max: fast (the GPU fast kernel; on the CPU the closed-form planner, checked against the "
         "reference) or max-port (the GPU port of MAX's kernel; on the CPU the reference loop itself), as verify")
      ->transform(one_of({"fast", "max-port"}, kKernelAliases))
      ->default_str("fast");
}

std::vector<check::Scenario> select_scenarios(std::vector<check::Scenario> all, const std::string& wanted, const std::string& path) {
  if (wanted.empty()) return all;
  // By name first; a name several scenarios share picks none of them (the first would be a guess).
  std::vector<size_t> named;
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].name == wanted) named.push_back(i);
  if (named.size() > 1)
    throw InputError(fmt::format("{}: --scenario {}: {} scenarios have this name (at {}); pick one by its index, e.g. "
                                 "--scenario {}, or rename them",
                                 path, wanted, named.size(), fmt::join(named, ", "), named[0]));
  if (named.size() == 1) return {all[named[0]]};
  for (size_t i = 0; i < all.size(); ++i) {
    if (std::to_string(i) == wanted) return {all[i]};
  }
  std::string names;
  for (const auto& s : all) names += (names.empty() ? "" : ", ") + s.name;
  throw InputError(fmt::format("{}: --scenario {}: no such scenario; the file holds: {}", path, wanted, names));
}

namespace {

// *.json in any case (*.JSON, *.Json), as a file manager shows them.
bool has_json_extension(const std::filesystem::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".json";
}

bool is_hidden(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  return name.size() > 1 && name[0] == '.' && name != "..";
}

}  // namespace

CLI::Validator scenario_name() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "'' names no scenario; give a scenario's name or its index (0 for the first)" : "";
      },
      "");
}

std::vector<std::string> scenario_files(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  // Every failure names its real cause (errno): a permission, a symlink loop, a name too long are
  // not "no such file", and an unreadable subfolder is not an internal error.
  auto refuse = [](const std::string& p, const std::error_code& ec) {
    if (ec.value() == ENOENT) throw InputError(fmt::format("{}: no such file or folder", p));
    throw InputError(fmt::format("{}: cannot read it: {}", p, io::file_error_cause(ec.value(), io::FileRole::input)));
  };
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec) refuse(p, ec);
    if (fs::is_directory(st)) {
      // Hidden files and folders (.git, an editor's .backup.json) are skipped, as most tools do; a
      // folder given by name is searched whatever its name.
      std::vector<std::string> found;
      std::string first_hidden;
      size_t hidden = 0;
      fs::recursive_directory_iterator it(p, ec), end;
      if (ec) refuse(p, ec);
      std::string last = p;  // the entry a failed step was about to enter
      for (; it != end; it.increment(ec)) {
        const fs::path entry = it->path();
        last = entry.string();
        std::error_code entry_ec;
        const bool hide = is_hidden(entry);
        if (hide && it->is_directory(entry_ec)) {
          it.disable_recursion_pending();
          // Only counted for the hint: what cannot be read in a skipped folder is not an error.
          for (fs::recursive_directory_iterator in(entry, entry_ec), e; !entry_ec && in != e; in.increment(entry_ec))
            if (in->is_regular_file(entry_ec) && has_json_extension(in->path()) && hidden++ == 0) first_hidden = in->path().string();
          continue;
        }
        if (!has_json_extension(entry)) continue;
        const fs::file_status est = fs::status(entry, entry_ec);
        if (hide) {
          if (fs::is_regular_file(est) && hidden++ == 0) first_hidden = entry.string();
          continue;
        }
        // A *.json entry that cannot be read (a dangling link, a loop) is refused, not skipped: a
        // gate must not pass over a scenario it was given.
        if (entry_ec || !fs::exists(est))
          refuse(entry.string(), entry_ec ? entry_ec : std::make_error_code(std::errc::no_such_file_or_directory));
        if (fs::is_regular_file(est)) found.push_back(entry.string());
      }
      if (ec) refuse(last, ec);  // a subfolder that could not be opened
      std::sort(found.begin(), found.end());
      if (found.empty())
        throw InputError(hidden ? fmt::format("{}: no *.json scenario files in this folder, only {} hidden one{} ({}{}), and "
                                              "hidden files and folders are skipped; give such a file by name, or rename "
                                              "it without the leading dot",
                                              p, hidden, hidden == 1 ? "" : "s", first_hidden, hidden > 1 ? ", ..." : "")
                                : fmt::format("{}: no *.json scenario files in this folder", p));
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(st)) {
      files.push_back(p);
    } else {
      throw InputError(fmt::format("{}: no such file or folder", p));
    }
  }
  return files;
}

profile::PlannerChoice choose(const BackendOptions& options) {
  profile::PlannerChoice choice = profile::choose_planner(options.backend, options.kernel);
  if (!choice.fallback_note.empty()) note(choice.fallback_note);
  return choice;
}

std::function<void()> traced(CLI::App& cmd, std::function<void()> body) {
  auto path = std::make_shared<std::string>();
  cmd.add_option("--trace", *path,
                 "Also write a Chrome/Perfetto trace of every phase (host ranges and CUDA event times, in us) to FILE.json")
      ->type_name("FILE.json");
  return [path, name = "mlaplan " + cmd.get_name(), body = std::move(body)] {
    outputs().claim_output(*path, "--trace");  // before any work: a bad path fails at once
    profile::TraceRecorder recorder;
    std::optional<profile::ActiveTrace> active;
    if (!path->empty()) active.emplace(recorder);
    {
      profile::PhaseTimer root;
      auto scope = root.phase(name);
      body();
    }
    // An interrupted command writes no trace: it would be of a partial run, and building it took
    // longer than the stop (1.7 GB for a long verify).
    if (path->empty() || profile::stop_requested()) return;
    write_output(*path, recorder.to_json());
    if (recorder.dropped_events())
      note(fmt::format("--trace {}: kept the first {} events; {} later ones were counted, not kept (otherData.dropped_events)",
                       *path, profile::TraceRecorder::kMaxEvents, recorder.dropped_events()));
  };
}

}  // namespace mlaplan::cli
