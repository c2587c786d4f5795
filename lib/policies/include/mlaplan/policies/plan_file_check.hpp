// `verify --plan`: plans produced elsewhere (a plan file as `run --format json` writes it, or an
// engine's port) judged against the scenarios they plan. It lives in policies, not check, because a
// plan may be under any engine's policy, and that policy's own planner is then its reference.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mlaplan/check/case_check.hpp"
#include "mlaplan/check/scenario.hpp"
#include "mlaplan/check/verify_report.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/io/plan_tables_io.hpp"
#include "mlaplan/profile/phase_timer.hpp"

namespace mlaplan::policies {

// The policy a plan names, spelled as run writes it (Policy::name(): max, packed, packed/align-A,
// ...); an InputError naming `path` and the entry's field otherwise.
Policy plan_entry_policy(const io::PlanEntry& entry, const std::string& path);

// A plan under another policy than max: the policy's own planner is its reference (cell for cell,
// refusals included), then its invariants are checked on the tables as run checks them, then the
// facts it states.
check::CaseResult check_policy_plan(const check::Scenario& scenario, const io::PlanEntry& entry, const Policy& policy,
                                    profile::PhaseTimer& timer);

// Where the plans and scenarios came from, for the records and messages.
struct PlanFileSources {
  std::string plan_path;      // the --plan file
  std::string scenario_path;  // the scenario file
  bool scenario_picked = false;  // `scenarios` is the one --scenario picked: plans of others are skipped
};

// Pairs each plan of `file` with the scenario it plans (by its "scenario" name, else the one scenario
// given) and judges it; in a list file, a scenario without a plan is a failure. Returns one record
// per case, in order, after calling `on_case` with each as soon as it is judged. Bad input (a plan
// no scenario matches, a policy no one writes) is an InputError before anything is judged.
std::vector<check::VerifyCaseRecord> check_plan_file(
    const io::PlanFile& file, const std::vector<check::Scenario>& scenarios, const PlanFileSources& sources,
    const std::function<void(const check::VerifyCaseRecord&)>& on_case = {});

}  // namespace mlaplan::policies
