// A policy's plan of a scenario in the form `run` reports it (plan_report.hpp): the tables, the
// chunks used, the rows streamed and the tokens they carry, planner "cpu-<policy>". Checking the plan
// is the caller's (check_policy_invariants, or the reference for max).
#pragma once

#include "mlaplan/policies/policy.hpp"
#include "mlaplan/io/plan_report.hpp"

namespace mlaplan::policies {

// Throws as plan_policy does: InfeasibleBatch for max past max_chunks, InputError for another refusal.
io::PlanReport policy_report(const check::Scenario& scenario, const Policy& policy);

}  // namespace mlaplan::policies
