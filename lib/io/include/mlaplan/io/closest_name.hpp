// "Did you mean ...?" for a misspelt name: an unknown option or subcommand (the CLI) and an unknown
// key of a scenario file alike.
#pragma once

#include <string>
#include <vector>

namespace mlaplan::io {

// Levenshtein distance: insertions, deletions and substitutions each cost one.
size_t edit_distance(const std::string& a, const std::string& b);

// "; did you mean X?" for the closest candidate within a third of the word's length (at least 2
// edits), "" where none is that close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace mlaplan::io
