// The lookup that the model and the workload presets share: each is a table of named rows, which
// options name in any case and help texts and errors list. A detail of models (not installed), shared with workloads.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "mlaplan/errors.hpp"

namespace mlaplan::models {

// "a, b, c": the presets' names in table order.
template <class Preset>
std::string preset_names(const std::vector<Preset>& presets) {
  std::string out;
  for (const Preset& p : presets) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

// The preset called `name`, compared without case. Otherwise an InputError "OPTION NAME: unknown
// WHAT; choose one of ... or give INSTEAD".
template <class Preset>
const Preset& find_preset(const std::vector<Preset>& presets, const std::string& name, const char* option,
                          const char* what, const char* instead) {
  const auto same = [&name](const std::string& preset_name) {
    return preset_name.size() == name.size() &&
           std::equal(preset_name.begin(), preset_name.end(), name.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  };
  for (const Preset& p : presets)
    if (same(p.name)) return p;
  throw InputError(fmt::format("{} {}: unknown {}; choose one of {} or give {}", option, name, what,
                               preset_names(presets), instead));
}

}  // namespace mlaplan::models
