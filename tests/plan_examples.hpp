// Plans built in code for the tests of the plan pictures (lib/render): batches from new-token
// counts, scenarios, the reports `run` makes of them, and the two examples the tests draw.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/check/scenario.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/policies/policy_report.hpp"
#include "mlaplan/io/plan_report.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/reference_planner.hpp"

// Not in mlaplan::test: its make_batch takes input row offsets, this one new-token counts.
namespace mlaplan::render::examples {

inline Batch make_batch(uint32_t page, uint32_t rows, uint32_t chunks, std::vector<uint32_t> cache, const std::vector<uint32_t>& inputs) {
  Batch b;
  b.page_size = page;
  b.buffer_token_size = rows;
  b.max_chunks = chunks;
  b.cache_lengths = std::move(cache);
  b.input_row_offsets = {0};
  for (uint32_t n : inputs) b.input_row_offsets.push_back(b.input_row_offsets.back() + n);
  return b;
}

inline check::Scenario make_scenario(std::string name, Batch batch) {
  check::Scenario s;
  s.name = std::move(name);
  s.batch = std::move(batch);
  validate_batch(s.batch);
  return s;
}

// The max plan, as `run --backend cpu` reports it.
inline io::PlanReport max_report(const check::Scenario& s) {
  io::PlanReport r;
  r.scenario = &s;
  r.policy = "max";
  r.backend = "cpu";
  r.planner = "cpu-reference";
  r.shape = plan_shape(s.batch);
  r.tables = plan_reference(s.batch);
  return r;
}

// Another policy's plan, as `run --policy ...` reports it (a refusal sets `refused`).
inline io::PlanReport report_or_refusal(const check::Scenario& s, const policies::Policy& policy) {
  try {
    return policies::policy_report(s, policy);
  } catch (const InputError& e) {
    io::PlanReport r;
    r.scenario = &s;
    r.policy = policy.name();
    r.refused = e.what();
    return r;
  }
}

inline policies::Policy packed_policy() {
  policies::Policy p;
  p.kind = policies::PolicyKind::packed;
  return p;
}

// The worked example of docs/semantics.md.
inline check::Scenario worked_example() { return make_scenario("worked-example", make_batch(128, 512, 4, {500, 0, 100}, {9, 200, 20})); }

// Sequence 1 split across chunks 0 and 1 with page padding at its end, chunk 3 unused (the scenario
// of the pixel tests).
inline check::Scenario split_example() { return make_scenario("split", make_batch(16, 256, 4, {80, 190, 50, 200}, {10, 10, 0, 0})); }

}  // namespace mlaplan::render::examples
