// Prose for an 80-to-120-column terminal: long lines broken at spaces, each continuation indented
// under its line, so that no line of a command's answer runs off the screen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mlaplan::io {

// Every line of `text` longer than `width` bytes broken at its last space at or before `width`
// (a word longer than a line stays whole), the continuation indented by the line's own leading
// spaces plus `hang`, and at least `min_indent` (run's prose under its labels' column). Lines within
// `width`, and the newlines, are kept as they are.
std::string wrap_lines(std::string_view text, size_t width = 120, size_t hang = 4, size_t min_indent = 0);

// A path for a line of prose: as it is where it has at most `width` bytes, else with its middle
// folders as "..." (its first folder and as many of its last as fit kept, so the file's name shows),
// and a name that alone is too long cut in its middle. A wrapped line cannot break a path, which is
// one word: a cost file's 150-character path ran past 120 columns.
std::string shorten_path(std::string_view path, size_t width = 100);

// "65536" as "64K", "1048576" as "1M": a count of rows in binary units where it is an exact multiple
// of one, else in digits (12288 is "12K", 10000 stays "10000"): the label never rounds.
std::string format_rows(uint64_t rows);

}  // namespace mlaplan::io
