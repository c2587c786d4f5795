// The four ways to print a sweep: a table for people, Markdown for reports, CSV for spreadsheets and
// JSON for scripts (scripts/plot_sweep.py reads it). Each includes the recommendation when given.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlaplan/explore/recommend.hpp"
#include "mlaplan/explore/sweep.hpp"

namespace mlaplan::explore {

struct SweepReport {
  const SweepResult* sweep = nullptr;
  std::optional<RecommendOptions> recommend_options;  // set with --recommend
  std::vector<Recommendation> recommendations;
};

std::string format_sweep_table(const SweepReport& report);
std::string format_sweep_markdown(const SweepReport& report);
std::string format_sweep_csv(const SweepReport& report);
std::string format_sweep_json(const SweepReport& report);

}  // namespace mlaplan::explore
