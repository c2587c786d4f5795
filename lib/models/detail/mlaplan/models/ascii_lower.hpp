// Names that options and CSV headers give in any case (model presets, column names), compared
// lower-cased. ASCII only, as the names are. A detail of models (not installed), shared with workloads.
#pragma once

#include <cctype>
#include <string>

namespace mlaplan::models {

inline std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace mlaplan::models
