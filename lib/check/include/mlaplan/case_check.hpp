// One verification case: plan a scenario with a planner and judge the result three ways (the
// reference, bit for bit; the properties; the expected block). Refusals must match too.
#pragma once

#include <optional>
#include <string>

#include "mlaplan/phase_timer.hpp"
#include "mlaplan/planner.hpp"
#include "mlaplan/scenario.hpp"
#include "mlaplan/table_diff.hpp"

namespace mlaplan {

struct CaseResult {
  bool passed = false;
  bool refused = false;       // the planner refused the batch as infeasible
  std::string detail;         // the first problem, one line; empty on a pass
  std::optional<TableDiff> diff;  // against the reference, when both produced tables
};

// Plans `scenario` with `planner` and checks it. DeviceError propagates (it is no verdict on the plan).
CaseResult check_case(const Scenario& scenario, Planner& planner, PhaseTimer& timer);

// Judges tables produced elsewhere (`verify --plan`). `tables` empty means the producer refused the batch.
CaseResult check_tables(const Scenario& scenario, const std::optional<PlanTables>& tables, PhaseTimer& timer,
                        bool tables_are_reference = false);

}  // namespace mlaplan
