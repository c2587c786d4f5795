// Reading tables produced elsewhere (an engine's port, a file from `run --format json`) for
// `verify --plan`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/check/case_check.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan::io {

struct LoadedPlan {
  std::optional<PlanTables> tables;  // absent when the file says {"infeasible": true} (the producer refused)
  std::string problem;  // set when the tables cannot be a plan of this shape: wrong row counts, values out of range
};

// One table as the file gives it, before its shape is known: the cells row by row, and the first
// cell outside its type's range (a wrong plan, reported once the shape is known to be right).
struct RawTable {
  bool matrix = true;               // a list of lists (buffer_lengths is a flat list)
  std::vector<size_t> row_sizes;    // values per row (matrix only)
  std::vector<int64_t> cells;       // row-major
  std::optional<size_t> first_out_of_range;  // index into cells
  std::string out_of_range_value;   // its JSON text
};

// One plan of a plan file, every key read and type-checked (a wrong type is an InputError naming
// the file, the field and the fix); comparing what it states with the reference is the checker's.
struct PlanEntry {
  std::string where;         // for messages: "t.json", or "t.json: scenarios[2]" inside a list
  std::string field_prefix;  // "" or "scenarios[2]."
  std::optional<std::string> scenario;  // the scenario it plans: run writes its name
  std::string policy = "max";           // run writes the policy it planned under
  // Plain guided's cost file, which its name does not hold (guided:PATH's does): what it chose by.
  std::string guide_cost_file;
  bool refused = false;       // {"infeasible": true}, or run's "refused" (a policy that cannot plan the batch)
  check::PlanClaims claims;          // chunks_used, padded_tokens, min_max_chunks, the batch's echo...
  bool has_tables = false;
  RawTable buffer_row_offsets, cache_offsets, buffer_lengths;
};

struct PlanFile {
  bool is_list = false;  // {"scenarios": [...]}, as run writes for several scenarios or policies
  std::vector<PlanEntry> plans;
};

// Reads a plan file: one plan object, or {"scenarios": [plan, ...]}. Keys are those run --format
// json writes (its run metadata, such as timings_us, planner and verification, is accepted and
// ignored) plus "infeasible" and "min_max_chunks"; any other key is an InputError naming it.
PlanFile load_plan_file(const std::string& path);
PlanFile parse_plan_file(const std::string& text, const std::string& path);

// The entry's tables in the shape of a plan of `batch_size` sequences with `rows` chunk rows, or the
// problem that makes them no such plan (wrong row counts, values out of range). `rows_owner` ends the
// row-count message: "the scenario has max_chunks = 4".
LoadedPlan shape_plan_tables(const PlanEntry& entry, uint32_t batch_size, uint32_t rows, const std::string& rows_owner);

// Reads a file holding one plan and shapes its tables for `max_chunks` rows (a list file is an
// InputError). Keys other than the tables are type-checked, not compared.
LoadedPlan load_plan_tables(const std::string& path, uint32_t batch_size, uint32_t max_chunks);

// The same from the file's text; `path` is used in messages only (the fuzz target calls this).
LoadedPlan parse_plan_tables(const std::string& text, const std::string& path, uint32_t batch_size,
                             uint32_t max_chunks);

}  // namespace mlaplan::io
