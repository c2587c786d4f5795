// The three checks of a plan: bit-exact against the reference, the properties of semantics.md,
// and the scenario's expected block.
#pragma once

#include <optional>
#include <string>

#include "mlaplan/profile/phase_timer.hpp"
#include "mlaplan/plan_tables.hpp"
#include "mlaplan/check/scenario.hpp"
#include "mlaplan/check/table_diff.hpp"

namespace mlaplan::check {

struct Verification {
  std::string status = "skipped";      // "pass", "fail" or "skipped"
  std::string reference = "skipped";   // "match", "mismatch", "self" (the plan is the reference's) or "skipped"
  std::string properties = "skipped";  // "pass", "fail" or "skipped"
  std::string expected = "absent";     // "pass", "fail", "absent" or "skipped"
  std::string detail;                  // the first problem found, empty on a pass
  std::optional<TableDiff> diff;       // against the reference, when it was compared
};

// Checks a feasible scenario's plan. `from_reference` skips the self-comparison when the tables
// came from the reference planner. Phases "reference" and "check" go to `timer`.
Verification verify_plan(const Scenario& scenario, const PlanTables& tables, bool from_reference, profile::PhaseTimer& timer);

}  // namespace mlaplan::check
