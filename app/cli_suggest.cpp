#include "cli_suggest.hpp"

#include "mlaplan/io/closest_name.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace mlaplan::cli {

std::optional<std::string> unknown_name_error(const CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> subcommands;
  for (const CLI::App* sub : app.get_subcommands({})) subcommands.push_back(sub->get_name());
  if (argc < 2) return std::nullopt;
  const std::string first = argv[1];
  if (first.empty())
    return fmt::format("'' is not a subcommand; the subcommands are {}; see `mlaplan --help`", fmt::join(subcommands, ", "));
  if (first[0] == '-') {  // --help, --version: CLI11's business; anything else is named here
    if (first == "--") return std::nullopt;
    const std::string name = first.substr(0, first.find('='));
    for (const CLI::Option* o : app.get_options()) {
      for (const std::string& n : o->get_lnames())
        if (name == "--" + n) return std::nullopt;
      for (const std::string& n : o->get_snames())
        if (name == "-" + n) return std::nullopt;
    }
    return fmt::format("unknown option {} before the subcommand; give the subcommand first ({}), then its options; see "
                       "`mlaplan --help`",
                       name, fmt::join(subcommands, ", "));
  }
  const CLI::App* sub = nullptr;
  for (const CLI::App* s : app.get_subcommands({}))
    if (s->get_name() == first) sub = s;
  if (!sub)
    return fmt::format("unknown subcommand '{}'{}; the subcommands are {}; see `mlaplan --help`", first,
                       io::did_you_mean(first, subcommands), fmt::join(subcommands, ", "));

  std::vector<std::string> names;
  for (const CLI::Option* o : sub->get_options()) {
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : o->get_snames()) names.push_back("-" + n);
  }
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    const bool long_name = arg.size() > 2 && arg.compare(0, 2, "--") == 0;
    const bool short_name = arg.size() == 2 && arg[0] == '-' && std::isalpha(static_cast<unsigned char>(arg[1]));
    if (!long_name && !short_name) continue;
    const std::string name = arg.substr(0, arg.find('='));
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    return fmt::format("mlaplan {}: unknown option {}{}; see `mlaplan {} --help`", first, name,
                       short_name ? "" : io::did_you_mean(name, names), first);
  }
  return std::nullopt;
}

}  // namespace mlaplan::cli
