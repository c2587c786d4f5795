// The edge cases of semantics.md as scenarios, for `mlaplan verify` with no arguments.
#pragma once

#include <vector>

#include "mlaplan/check/scenario.hpp"

namespace mlaplan::check {

std::vector<Scenario> builtin_edge_cases();

}  // namespace mlaplan::check
