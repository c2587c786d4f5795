// A named batch from a scenario file, with the golden plan it may carry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan::check {

// The scenario's optional `expected` block. Any table left out is not compared.
struct ExpectedPlan {
  bool infeasible = false;
  std::optional<uint64_t> min_max_chunks;  // with infeasible: the smallest max_chunks that fits
  std::optional<uint64_t> padded_tokens;
  std::optional<uint64_t> chunks_used;
  std::optional<std::vector<uint32_t>> buffer_row_offsets;  // flattened M x (B + 1)
  std::optional<std::vector<uint32_t>> cache_offsets;       // flattened M x B
  std::optional<std::vector<int32_t>> buffer_lengths;       // M
};

struct Scenario {
  std::string name;
  std::string description;
  std::string file;          // where it was read from ("" when built in code)
  std::string field_prefix;  // "" for a single-scenario file, "scenarios[2]." inside a list
  Batch batch;
  std::optional<ExpectedPlan> expected;

  // "file.json: scenarios[2].max_chunks: ..." from a message that starts with a field name.
  std::string locate(const std::string& field_message) const;
};

// Compares a plan with the scenario's expected block. Returns a description of the first
// difference, or nothing when every given part matches.
std::optional<std::string> check_expected(const ExpectedPlan& expected, const PlanTables& tables);

}  // namespace mlaplan::check
