#include "mlaplan/check/plan_check.hpp"

#include <fmt/format.h>

#include "mlaplan/check/property_check.hpp"
#include "mlaplan/reference_planner.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::check {

Verification verify_plan(const Scenario& scenario, const PlanTables& tables, bool from_reference, profile::PhaseTimer& timer) {
  Verification v;
  std::string first_problem;
  if (from_reference) {
    v.reference = "self";
  } else {
    PlanTables ref;
    {
      auto scope = timer.phase("reference");
      ref = plan_reference(scenario.batch, profile::stop_flag());
    }
    auto scope = timer.phase("check");
    v.diff = diff_tables(ref, tables);
    v.reference = v.diff->equal() ? "match" : "mismatch";
    if (!v.diff->equal()) first_problem = v.diff->describe();
  }
  {
    auto scope = timer.phase("check");
    if (!v.diff || v.diff->shape_error.empty()) {  // tables of the wrong shape cannot be indexed
      const PropertyReport p = check_properties(scenario.batch, tables, 1);
      v.properties = p.ok() ? "pass" : "fail";
      if (!p.ok() && first_problem.empty())
        first_problem = fmt::format("{} ({} property violations)", p.messages.front(), p.violations);
    }
    if (scenario.expected) {
      const auto e = check_expected(*scenario.expected, tables);
      v.expected = e ? "fail" : "pass";
      if (e && first_problem.empty()) first_problem = *e;
    }
  }
  v.status = first_problem.empty() ? "pass" : "fail";
  v.detail = first_problem;
  return v;
}

}  // namespace mlaplan::check
