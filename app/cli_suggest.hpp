// Unknown subcommands and options, named with the closest valid spelling, before CLI11 parses (its
// own messages say "A subcommand is required" for `mlaplan frob` and list extras without a hint).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace mlaplan::cli {

// The one-line error for the first unknown subcommand or option in argv, or nothing when every
// name is known (values, positionals and everything after "--" are not looked at).
std::optional<std::string> unknown_name_error(const CLI::App& app, int argc, const char* const* argv);

}  // namespace mlaplan::cli
