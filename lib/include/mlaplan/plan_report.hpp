// Everything `run` shows about one planned scenario, and the three ways to print it.
// Measuring is kept apart from printing: the report holds numbers, the formatters only format.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlaplan/plan_check.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/plan_tables.hpp"
#include "mlaplan/scenario.hpp"

namespace mlaplan {

struct PlanReport {
  const Scenario* scenario = nullptr;
  std::string backend;  // "cpu" or "gpu"
  std::string planner;  // "cpu-reference", "gpu-fast", ...
  std::optional<std::string> device;
  PlanShape shape;
  PlanTables tables;
  Verification verification;
  std::vector<std::pair<std::string, double>> timings_us;
};

// One JSON object, the contract of interface.md (keys in the documented order).
std::string format_plan_json(const PlanReport& report);
// Long form: one row per chunk and column, the sentinel column (sequence = batch_size) with an empty cache_offset.
std::string format_plan_csv(const PlanReport& report, bool header = true);
// For people: one row per used chunk, with at most `max_sequences` sequences spelled out per chunk.
std::string format_plan_table(const PlanReport& report, size_t max_sequences = 8);

}  // namespace mlaplan
