// The ways to print a sweep: the answer for people (the recommendation, then a table within 120
// columns), every column for people (wide), Markdown for reports, CSV for spreadsheets and JSON for
// scripts (scripts/plot_sweep.py reads it). Each includes the recommendation when given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/sweeps/sweep.hpp"

namespace mlaplan::sweeps {

struct SweepReport {
  const SweepResult* sweep = nullptr;
  std::optional<RecommendOptions> recommend_options;  // set with --recommend
  std::vector<Recommendation> recommendations;
  // mlaplan's fused loop priced over the same batches and grid (sweep --gpu, where its cost files ship):
  // the rows Recommendation::fused_row and fused_same_time index. Null: none.
  const SweepResult* fused = nullptr;
};

// sweep's default: the recommendation first (without the buffers it passed over: the table shows
// them), the batches and cost files, a table within 120 columns, a legend (sweep_brief.cpp).
std::string format_sweep_brief(const SweepReport& report);
// --format wide: the header, every column, then the whole recommendation.
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
// The default screen's parts (sweep_brief.cpp): its batches and cost-file lines, its table's cells
// (within 120 columns) and its legend.
std::string sweep_brief_summary(const SweepResult& sweep);
SweepCells sweep_brief_cells(const SweepReport& report);
std::string sweep_brief_legend(const SweepReport& report);
// rejections: with each buffer the recommendation passed over and why.
std::string sweep_recommendation(const SweepReport& report, bool rejections = true);
std::string format_sweep_markdown(const SweepReport& report);

// The values of a sweep row as CSV, JSON and the Python binding's dicts write them: one list, in the
// order all three write it, so a field is named, read and left out in one place. A value is none
// where the row has none (max_chunks of a policy other than max, the memory of a row without a model).
using SweepValue = std::variant<std::monostate, std::string, uint64_t, double>;
constexpr unsigned kSweepCsv = 1, kSweepJson = 2, kSweepPython = 4;  // SweepField::outputs
struct SweepField {
  const char* key;   // the CSV column, the JSON key and the Python key
  unsigned outputs;  // which of them write it (kSweep* bits)
  SweepValue (*value)(const SweepRow& row);
  int csv_decimals = 0;               // a real number's digits after the point in CSV
  const char* json_object = nullptr;  // JSON nests it in this object of the row ("iterations")
  const char* json_key = nullptr;     // under this key
  bool json_when_set = false;         // JSON leaves it out where none (else null)
  bool timed = false;                 // a predicted time: written only for a sweep with a cost model
  bool eager = false;                 // written only for a sweep with eager timing (--timing eager)
};
const std::vector<SweepField>& sweep_fields();
// Whether a sweep's rows have predicted times (a cost model was given), so timed fields are written.
bool sweep_has_time(const SweepResult& sweep);
// Whether those times are eager (--timing eager), so eager fields are written.
bool sweep_has_eager(const SweepResult& sweep);

std::string format_sweep_csv(const SweepReport& report);
std::string format_sweep_json(const SweepReport& report);

}  // namespace mlaplan::sweeps
