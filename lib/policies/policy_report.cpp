#include "mlaplan/policies/policy_report.hpp"

namespace mlaplan::policies {

io::PlanReport policy_report(const check::Scenario& scenario, const Policy& policy) {
  io::PlanReport r;
  r.scenario = &scenario;
  r.policy = policy.name();
  r.backend = "cpu";
  r.planner = "cpu-" + policy.name();
  PolicyPlan plan = plan_policy(scenario.batch, policy);
  r.tables = std::move(plan.tables);
  r.shape.chunks_used = plan.outcome.chunks;
  r.shape.padded_tokens = plan.outcome.streamed_rows;
  r.shape.input_tokens = plan.outcome.payload_tokens;
  return r;
}

}  // namespace mlaplan::policies
