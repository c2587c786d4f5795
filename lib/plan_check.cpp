#include "mlaplan/plan_check.hpp"

#include <fmt/format.h>

#include "mlaplan/property_check.hpp"
#include "mlaplan/reference_planner.hpp"
#include "mlaplan/table_diff.hpp"

namespace mlaplan {

Verification verify_plan(const Scenario& scenario, const PlanTables& tables, bool from_reference, PhaseTimer& timer) {
  Verification v;
  std::string first_problem;
  if (from_reference) {
    v.reference = "self";
  } else {
    PlanTables ref;
    {
      auto scope = timer.phase("reference");
      ref = plan_reference(scenario.batch);
    }
    auto scope = timer.phase("check");
    const TableDiff d = diff_tables(ref, tables);
    v.reference = d.equal() ? "match" : "mismatch";
    if (!d.equal()) first_problem = "reference: " + d.describe();
  }
  {
    auto scope = timer.phase("check");
    const PropertyReport p = check_properties(scenario.batch, tables, 1);
    v.properties = p.ok() ? "pass" : "fail";
    if (!p.ok() && first_problem.empty())
      first_problem = fmt::format("properties: {} ({} violations)", p.messages.front(), p.violations);
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

}  // namespace mlaplan
