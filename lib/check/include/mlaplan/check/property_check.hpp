// Judges a plan by the properties of semantics.md alone, without running the reference planner:
// an independent second opinion on any set of tables, ours or an engine's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan::check {

struct PropertyReport {
  uint64_t violations = 0;            // every broken cell or invariant counted
  std::vector<std::string> messages;  // the first few, each naming the chunk, sequence and property

  bool ok() const { return violations == 0; }
};

// Requires a validated, feasible batch; tables of the wrong shape are reported, not indexed.
PropertyReport check_properties(const Batch& batch, const PlanTables& tables, size_t max_messages = 5);

}  // namespace mlaplan::check
