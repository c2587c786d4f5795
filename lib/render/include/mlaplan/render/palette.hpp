// Colours of the pictures: Paul Tol's "muted" qualitative scheme (https://personal.sron.nl/~pault/),
// nine colours that stay distinct under the common colour-vision deficiencies, with pale grey for
// what holds nothing. Each colour comes with the ink (text colour) that reads on it.
#pragma once

#include <cstddef>
#include <string_view>

namespace mlaplan::render {

struct Swatch {
  std::string_view fill;
  std::string_view ink;
};

inline constexpr Swatch kSequenceSwatches[] = {
    {"#CC6677", "#000000"},  // rose
    {"#332288", "#FFFFFF"},  // indigo
    {"#DDCC77", "#000000"},  // sand
    {"#117733", "#FFFFFF"},  // green
    {"#88CCEE", "#000000"},  // cyan
    {"#882255", "#FFFFFF"},  // wine
    {"#44AA99", "#000000"},  // teal
    {"#999933", "#000000"},  // olive
    {"#AA4499", "#FFFFFF"},  // purple
};
inline constexpr size_t kSwatchCount = sizeof(kSequenceSwatches) / sizeof(kSequenceSwatches[0]);

// Sequence b's colour: neighbours in a chunk never share one.
inline constexpr Swatch sequence_swatch(size_t b) { return kSequenceSwatches[b % kSwatchCount]; }

inline constexpr std::string_view kUnusedFill = "#DDDDDD";     // unused chunks (Tol's "no data" grey)
inline constexpr std::string_view kFrameStroke = "#444444";    // bar outlines, axes
inline constexpr std::string_view kBufferEndStroke = "#000000";
inline constexpr std::string_view kInk = "#222222";            // text on the page

}  // namespace mlaplan::render
