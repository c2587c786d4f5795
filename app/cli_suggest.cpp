#include "cli_suggest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace mlaplan::cli {

namespace {

// Levenshtein distance: insertions, deletions and substitutions each cost one.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "; did you mean X?" for the closest candidate within a third of the word's length (at least 2 edits).
std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best.empty() ? "" : fmt::format("; did you mean {}?", best);
}

}  // namespace

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
                       closest(first, subcommands), fmt::join(subcommands, ", "));

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
                       short_name ? "" : closest(name, names), first);
  }
  return std::nullopt;
}

}  // namespace mlaplan::cli
