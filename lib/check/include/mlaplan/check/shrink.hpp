// Shrinking a failing case to a minimal reproducer: fewer sequences, fewer chunks, smaller values,
// as long as the failure persists.
#pragma once

#include <functional>

#include "mlaplan/check/batch_limits.hpp"
#include "mlaplan/check/scenario.hpp"

namespace mlaplan::check {

// Greedily simplifies `failing` (dropping its expected block) while `still_fails` holds, calling it
// at most `budget` times, and no more once a stop is requested (Ctrl-C). Every candidate passed to `still_fails` is a valid batch that `limits` admits.
Scenario shrink_scenario(const Scenario& failing, const std::function<bool(const Scenario&)>& still_fails,
                         int budget = 4000, const BatchLimits& limits = {});

}  // namespace mlaplan::check
