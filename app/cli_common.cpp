#include "cli_common.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "mlaplan/errors.hpp"
#include "mlaplan/file_error.hpp"
#include "output_files.hpp"
#include "mlaplan/phase_timer.hpp"
#include "mlaplan/stop_request.hpp"
#include "mlaplan/trace_recorder.hpp"

namespace mlaplan::cli {

namespace {

void on_interrupt(int signal) {
  request_stop();
  std::signal(signal, SIG_DFL);  // the next one kills
}

}  // namespace

InterruptScope::InterruptScope() {
  clear_stop_request();
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
}

InterruptScope::~InterruptScope() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

namespace {

// Messages quote user input (names, paths, CSV cells): control characters are shown escaped and
// very long messages clipped, so an error stays one readable line and cannot drive the terminal.
std::string one_line(const std::string& message) {
  std::string out;
  out.reserve(message.size());
  for (unsigned char c : message) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += ' ';
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  constexpr size_t kMaxLine = 4096;  // a 10 MB name in a message helps nobody
  if (out.size() > kMaxLine) out = fmt::format("{}... ({} more bytes)", out.substr(0, kMaxLine), out.size() - kMaxLine);
  return out;
}

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

void note(const std::string& message) { fmt::print(stderr, "mlaplan: note: {}\n", one_line(message)); }

void error(const std::string& message) { fmt::print(stderr, "mlaplan: error: {}\n", one_line(message)); }

void write_output(const std::string& path, const std::string& content) {
  if (path.empty() || path == "-") return write_stdout(content);
  outputs().stage(path, content);  // main renames it into place once the whole command has succeeded
}

void add_backend_option(CLI::App& cmd, Backend& backend) {
  cmd.add_option_function<std::string>(
         "--backend",
         [&backend](const std::string& v) { backend = v == "cpu" ? Backend::cpu : v == "gpu" ? Backend::gpu : Backend::automatic; },
         "Where to plan: auto (the GPU when one is usable, else the CPU, saying so), gpu or cpu")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}))
      ->default_str("auto");
}

void add_backend_options(CLI::App& cmd, BackendOptions& options) {
  add_backend_option(cmd, options.backend);
  cmd.add_option_function<std::string>(
         "--kernel", [&options](const std::string& v) { options.kernel = v == "seed" ? GpuKernel::seed : GpuKernel::fast; },
         "GPU kernel: fast, or seed (the port of the seed's kernel, the baseline); the CPU backend always uses the reference")
      ->check(CLI::IsMember({"fast", "seed"}))
      ->default_str("fast");
}

std::vector<Scenario> select_scenarios(std::vector<Scenario> all, const std::string& wanted, const std::string& path) {
  if (wanted.empty()) return all;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].name == wanted || std::to_string(i) == wanted) return {all[i]};
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

std::vector<std::string> scenario_files(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  // Every failure names its real cause (errno): a permission, a symlink loop, a name too long are
  // not "no such file", and an unreadable subfolder is not an internal error.
  auto refuse = [](const std::string& p, const std::error_code& ec) {
    if (ec.value() == ENOENT) throw InputError(fmt::format("{}: no such file or folder", p));
    throw InputError(fmt::format("{}: cannot read it: {}", p, file_error_cause(ec.value(), FileRole::input)));
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

PlannerChoice choose(const BackendOptions& options) {
  PlannerChoice choice = choose_planner(options.backend, options.kernel);
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
    TraceRecorder recorder;
    std::optional<ActiveTrace> active;
    if (!path->empty()) active.emplace(recorder);
    {
      PhaseTimer root;
      auto scope = root.phase(name);
      body();
    }
    // An interrupted command writes no trace: it would be of a partial run, and building it took
    // longer than the stop (1.7 GB for a long verify).
    if (path->empty() || stop_requested()) return;
    write_output(*path, recorder.to_json());
    if (recorder.dropped_events())
      note(fmt::format("--trace {}: kept the first {} events; {} later ones were counted, not kept (otherData.dropped_events)",
                       *path, TraceRecorder::kMaxEvents, recorder.dropped_events()));
  };
}

}  // namespace mlaplan::cli
