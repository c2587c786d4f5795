// Reading tables produced elsewhere (an engine's port, a file from `run --format json`) for
// `verify --plan`.
#pragma once

#include <optional>
#include <string>

#include "mlaplan/plan_tables.hpp"

namespace mlaplan {

struct LoadedPlan {
  std::optional<PlanTables> tables;  // absent when the file says {"infeasible": true} (the producer refused)
  std::string problem;  // set when the tables cannot be a plan of this shape: wrong row counts, values out of range
};

// Reads `buffer_row_offsets`, `cache_offsets` and `buffer_lengths` (other keys are ignored) and
// checks them against the scenario's shape. A file that is not JSON, or tables that hold
// non-integers, is an InputError; a plan of the wrong shape comes back in `problem` (a wrong plan).
LoadedPlan load_plan_tables(const std::string& path, uint32_t batch_size, uint32_t max_chunks);

// The same from the file's text; `path` is used in messages only (the fuzz target calls this).
LoadedPlan parse_plan_tables(const std::string& text, const std::string& path, uint32_t batch_size,
                             uint32_t max_chunks);

}  // namespace mlaplan
