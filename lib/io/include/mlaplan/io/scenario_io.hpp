// Reading and writing scenario files (the format in docs/scenario-format.md and interface.md).
#pragma once

#include <string>
#include <vector>

#include "mlaplan/check/scenario.hpp"

namespace mlaplan::io {

// Reads a file holding one scenario object or {"scenarios": [...]}. Every problem is an
// InputError naming the file, the field (with array indices) and the fix; malformed JSON names
// the line and column.
std::vector<check::Scenario> load_scenario_file(const std::string& path);

// The same from text; `file` is used in messages and `default_name` for scenarios without a name.
std::vector<check::Scenario> parse_scenarios(const std::string& text, const std::string& file, const std::string& default_name);

// One scenario as a JSON object that load_scenario_file accepts (input_row_offsets form),
// with its expected block if it has one.
std::string scenario_to_json(const check::Scenario& scenario);

}  // namespace mlaplan::io
