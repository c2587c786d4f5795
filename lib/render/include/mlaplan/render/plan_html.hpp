// `run --html`: one self-contained page with the picture of every plan (the policies of a scenario
// side by side in one picture), a summary table per scenario and the text chunk tables.
#pragma once

#include <string>
#include <vector>

#include "mlaplan/io/plan_report.hpp"

namespace mlaplan::render {

// `reports` in the order run made them (scenario-major, then policy); `command` is shown on the page.
std::string plan_html(const std::vector<io::PlanReport>& reports, const std::string& command, size_t max_sequences = 8);
// `run --svg`: every report as one picture, one panel each, in the same order.
std::string plans_svg(const std::vector<io::PlanReport>& reports);

}  // namespace mlaplan::render
