// `sweep --html`: one self-contained page with the sweep's plot, its table and the recommendation.
#pragma once

#include <string>

#include "mlaplan/sweeps/sweep_format.hpp"

namespace mlaplan::render {

std::string sweep_html(const sweeps::SweepReport& report, const std::string& command);

}  // namespace mlaplan::render
