// The edge cases of semantics.md as scenarios, for `mlaplan verify` with no arguments.
#pragma once

#include <vector>

#include "mlaplan/scenario.hpp"

namespace mlaplan {

std::vector<Scenario> builtin_edge_cases();

}  // namespace mlaplan
