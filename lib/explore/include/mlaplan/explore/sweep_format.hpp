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

// The parts the formats are made of, for other renderings (the HTML report): the cells of the table
// format (titles, which columns hold numbers, one row of text per sweep row), its header lines and
// its recommendation text ("" without recommend_options).
struct SweepCells {
  std::vector<std::string> titles;
  std::vector<bool> numeric;
  std::vector<std::vector<std::string>> rows;
};
SweepCells sweep_cells(const SweepReport& report);
std::string sweep_summary(const SweepResult& sweep);
std::string sweep_recommendation(const SweepReport& report);
std::string format_sweep_markdown(const SweepReport& report);
std::string format_sweep_csv(const SweepReport& report);
std::string format_sweep_json(const SweepReport& report);

}  // namespace mlaplan::explore
