// One verification case: plan a scenario with a planner and judge the result three ways (the
// reference, bit for bit; the properties; the expected block). Refusals must match too.
#pragma once

#include <optional>
#include <string>

#include "mlaplan/profile/phase_timer.hpp"
#include "mlaplan/profile/planner.hpp"
#include "mlaplan/check/scenario.hpp"
#include "mlaplan/check/table_diff.hpp"

namespace mlaplan::check {

struct CaseResult {
  bool passed = false;
  bool refused = false;       // the planner refused the batch as infeasible
  std::string detail;         // the first problem, one line; empty on a pass
  std::optional<TableDiff> diff;  // against the reference, when both produced tables
};

// Plans `scenario` with `planner` and checks it. DeviceError propagates (it is no verdict on the plan).
CaseResult check_case(const Scenario& scenario, profile::Planner& planner, profile::PhaseTimer& timer);

// Judges tables produced elsewhere (`verify --plan`). `tables` empty means the producer refused the batch.
CaseResult check_tables(const Scenario& scenario, const std::optional<PlanTables>& tables, profile::PhaseTimer& timer,
                        bool tables_are_reference = false);

// What a plan file states beside its tables (`verify --plan`): each value given is a fact of the plan
// and is compared with the reference's; absent ones are not compared.
struct PlanClaims {
  std::optional<uint64_t> min_max_chunks;  // with a refusal: the smallest max_chunks that fits
  std::optional<uint64_t> chunks_used, padded_tokens, input_tokens;
  std::optional<uint64_t> batch_size, page_size, buffer_token_size, max_chunks;  // the batch, echoed
};

// The first claim that differs from the right value, as "field: the file says X, the right value is Y";
// nothing when all agree. The batch's echo is compared with `batch`, the rest with the values given.
std::optional<std::string> compare_claims(const Batch& batch, const PlanClaims& claims, uint64_t chunks_used,
                                          uint64_t padded_tokens, uint64_t input_tokens,
                                          std::optional<uint64_t> min_max_chunks);

// Judges a max plan read from a file: the batch's echo, then the tables (or the refusal, judged as a
// refusal from --external is, with the stated min_max_chunks), then the facts against plan_shape.
CaseResult check_plan_claims(const Scenario& scenario, const std::optional<PlanTables>& tables, const PlanClaims& claims,
                             profile::PhaseTimer& timer);

}  // namespace mlaplan::check
