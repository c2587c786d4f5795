#include "cli_common.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "mlaplan/byte_format.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/explore/recommend.hpp"
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
  if (path.empty() || path == "-") {
    std::fwrite(content.data(), 1, content.size(), stdout);
    std::fflush(stdout);
    return;
  }
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code kind_ec;
  const fs::file_status st = fs::status(target, kind_ec);
  if (!kind_ec && fs::exists(st) && !fs::is_regular_file(st)) {
    // A device or pipe (-o /dev/null, a FIFO): write into it; renaming over it would replace it.
    if (fs::is_directory(st)) throw InputError(fmt::format("{}: is a folder; give a file name", path));
    std::ofstream out(target, std::ios::binary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out) throw InputError(fmt::format("{}: writing the output failed", path));
    return;
  }
  const fs::path tmp = target.parent_path() / fmt::format(".{}.tmp{}", target.filename().string(), ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(fmt::format("{}: cannot write the output file; check that its folder exists", path));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw InputError(fmt::format("{}: writing the output failed (disk full?)", path));
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw InputError(fmt::format("{}: cannot replace the output file: {}", path, ec.message()));
  }
}

void add_memory_limit_option(CLI::App& cmd, MemoryLimit& limit) {
  cmd.add_option_function<std::string>(
         "--memory-limit",
         [&limit](const std::string& v) {
           constexpr uint64_t kLeast = uint64_t{1} << 20;
           const uint64_t bytes = explore::parse_byte_size(v, "--memory-limit");
           if (bytes < kLeast)
             throw InputError(fmt::format("--memory-limit {}: below the least of {}; give e.g. 512MiB or 4GiB", v,
                                          format_bytes(kLeast)));
           limit.bytes = bytes;
           limit.given = true;
         },
         "Most memory the plan tables may take (8 bytes per chunk and column: 8 x max_chunks x (B+1) per batch); "
         "a batch or option past it is refused before anything is allocated. E.g. 512MiB, 8GiB")
      ->type_name("SIZE")
      ->default_str("2GiB");
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

std::vector<std::string> scenario_files(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file() && e.path().extension() == ".json") found.push_back(e.path().string());
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) throw InputError(fmt::format("{}: no *.json scenario files in this folder", p));
      files.insert(files.end(), found.begin(), found.end());
    } else if (std::filesystem::exists(p, ec)) {
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
    TraceRecorder recorder;
    std::optional<ActiveTrace> active;
    if (!path->empty()) active.emplace(recorder);
    {
      PhaseTimer root;
      auto scope = root.phase(name);
      body();
    }
    if (!path->empty()) write_output(*path, recorder.to_json());
  };
}

}  // namespace mlaplan::cli
