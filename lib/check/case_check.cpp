#include "mlaplan/case_check.hpp"

#include <fmt/format.h>

#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/plan_check.hpp"

namespace mlaplan {

namespace {

CaseResult judge_refusal(const Scenario& s, const PlanShape& shape, std::optional<uint64_t> refused_min) {
  CaseResult r;
  r.refused = refused_min.has_value();
  if (shape.feasible) {
    if (refused_min)
      r.detail = fmt::format("the planner refused a feasible batch ({} padded tokens fit in {} chunks; it asked for {})",
                             shape.padded_tokens, shape.min_max_chunks, *refused_min);
  } else if (!refused_min) {
    r.detail = fmt::format("the planner produced a plan for an infeasible batch (it needs max_chunks >= {}, has {})",
                           shape.min_max_chunks, s.batch.max_chunks);
  } else if (*refused_min != 0 && *refused_min != shape.min_max_chunks) {
    r.detail = fmt::format("the planner refused the batch asking for max_chunks >= {}; the smallest that fits is {}",
                           *refused_min, shape.min_max_chunks);
  } else if (s.expected && !s.expected->infeasible) {
    r.detail = fmt::format("expected: the block holds a plan, but the batch is infeasible (it needs max_chunks >= {})",
                           shape.min_max_chunks);
  } else if (s.expected && s.expected->min_max_chunks && *s.expected->min_max_chunks != shape.min_max_chunks) {
    r.detail = fmt::format("expected.min_max_chunks: expected {}, got {}", *s.expected->min_max_chunks,
                           shape.min_max_chunks);
  }
  r.passed = r.detail.empty();
  return r;
}

}  // namespace

CaseResult check_tables(const Scenario& s, const std::optional<PlanTables>& tables, PhaseTimer& timer,
                        bool tables_are_reference) {
  PlanShape shape;
  {
    auto scope = timer.phase("check");
    shape = plan_shape(s.batch);
  }
  if (!shape.feasible || !tables) {
    // A refusal from --plan carries no minimum; 0 means "not stated".
    return judge_refusal(s, shape, tables ? std::nullopt : std::optional<uint64_t>(0));
  }
  const Verification v = verify_plan(s, *tables, tables_are_reference, timer);
  CaseResult r;
  r.passed = v.status == "pass";
  r.detail = v.detail;
  r.diff = v.diff;
  return r;
}

CaseResult check_case(const Scenario& s, Planner& planner, PhaseTimer& timer) {
  std::optional<PlanTables> tables;
  try {
    tables = planner.plan(s.batch, timer);
  } catch (const InfeasibleBatch& e) {
    PlanShape shape;
    {
      auto scope = timer.phase("check");
      shape = plan_shape(s.batch);
    }
    return judge_refusal(s, shape, e.min_max_chunks());
  }
  return check_tables(s, tables, timer, planner.is_reference());
}

}  // namespace mlaplan
