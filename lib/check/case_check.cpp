#include "mlaplan/check/case_check.hpp"

#include <fmt/format.h>

#include <iterator>
#include <utility>

#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/check/plan_check.hpp"

namespace mlaplan::check {

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

CaseResult check_tables(const Scenario& s, const std::optional<PlanTables>& tables, profile::PhaseTimer& timer,
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

std::optional<std::string> compare_claims(const Batch& b, const PlanClaims& c, uint64_t chunks_used, uint64_t padded_tokens,
                                          uint64_t input_tokens, std::optional<uint64_t> min_max_chunks) {
  const std::pair<const char*, std::pair<std::optional<uint64_t>, std::optional<uint64_t>>> facts[] = {
      {"batch_size", {c.batch_size, b.batch_size()}},
      {"page_size", {c.page_size, b.page_size}},
      {"buffer_token_size", {c.buffer_token_size, b.buffer_token_size}},
      {"max_chunks", {c.max_chunks, b.max_chunks}},
      {"min_max_chunks", {c.min_max_chunks, min_max_chunks}},
      {"chunks_used", {c.chunks_used, chunks_used}},
      {"padded_tokens", {c.padded_tokens, padded_tokens}},
      {"input_tokens", {c.input_tokens, input_tokens}},
  };
  for (size_t i = 0; i < std::size(facts); ++i) {
    const auto& [stated, right] = facts[i].second;
    if (stated && right && *stated != *right)
      return fmt::format("{}: the file says {}, the {} {}", facts[i].first, *stated,
                         i < 4 ? "scenario has" : "right value is", *right);  // the first four echo the batch
  }
  return std::nullopt;
}

CaseResult check_plan_claims(const Scenario& s, const std::optional<PlanTables>& tables, const PlanClaims& claims,
                             profile::PhaseTimer& timer) {
  PlanShape shape;
  {
    auto scope = timer.phase("check");
    shape = plan_shape(s.batch);
  }
  // Tables for another batch say nothing about this one: the echo first.
  PlanClaims echo;
  echo.batch_size = claims.batch_size;
  echo.page_size = claims.page_size;
  echo.buffer_token_size = claims.buffer_token_size;
  echo.max_chunks = claims.max_chunks;
  if (auto wrong = compare_claims(s.batch, echo, 0, 0, 0, std::nullopt)) {
    CaseResult r;
    r.detail = *wrong;
    return r;
  }
  CaseResult r;
  if (!tables) {
    // The same judgement as a refusal through --external: a stated minimum must be the right one.
    r = judge_refusal(s, shape, claims.min_max_chunks.value_or(0));
  } else {
    r = check_tables(s, tables, timer);
  }
  if (!r.passed) return r;
  PlanClaims rest = claims;
  if (!tables) rest.min_max_chunks.reset();  // judged with the refusal
  if (auto wrong = compare_claims(s.batch, rest, shape.chunks_used, shape.padded_tokens, shape.input_tokens,
                                  shape.min_max_chunks)) {
    r.passed = false;
    r.detail = *wrong;
  }
  return r;
}

CaseResult check_case(const Scenario& s, profile::Planner& planner, profile::PhaseTimer& timer) {
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

}  // namespace mlaplan::check
