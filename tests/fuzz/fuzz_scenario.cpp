// libFuzzer target: scenario files. The bytes are a scenario file's text. Every accepted scenario
// must survive scenario_to_json and a re-parse unchanged; small feasible ones are planned by the
// reference and the fast CPU planner, which must agree and keep the properties of semantics.md;
// infeasible ones must be refused by both with the same minimum; check_expected must not crash.
// A rejection (InputError) is normal; any other exception, a sanitizer report or a broken
// invariant is a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/check/property_check.hpp"
#include "mlaplan/reference_planner.hpp"
#include "mlaplan/check/scenario.hpp"
#include "mlaplan/io/scenario_io.hpp"

using namespace mlaplan;

namespace {

constexpr uint64_t kMaxCells = uint64_t{1} << 16;  // plan only tables this small (time per input)

bool same_batch(const Batch& a, const Batch& b) {
  return a.page_size == b.page_size && a.buffer_token_size == b.buffer_token_size && a.max_chunks == b.max_chunks &&
         a.cache_lengths == b.cache_lengths && a.input_row_offsets == b.input_row_offsets;
}

bool same_expected(const std::optional<check::ExpectedPlan>& a, const std::optional<check::ExpectedPlan>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return a->infeasible == b->infeasible && a->min_max_chunks == b->min_max_chunks &&
         a->padded_tokens == b->padded_tokens && a->chunks_used == b->chunks_used &&
         a->buffer_row_offsets == b->buffer_row_offsets && a->cache_offsets == b->cache_offsets &&
         a->buffer_lengths == b->buffer_lengths;
}

void round_trip(const check::Scenario& s) {
  const std::string text = io::scenario_to_json(s);
  std::vector<check::Scenario> again;
  try {
    again = io::parse_scenarios(text, "fuzz.json", "fuzz");
  } catch (const std::exception& e) {
    mlaplan_fuzz::fail(__FILE__, __LINE__, std::string("scenario_to_json wrote a file parse_scenarios refuses: ") +
                                               e.what() + "\n" + text);
  }
  FUZZ_CHECK(again.size() == 1, "re-parse gave " + std::to_string(again.size()) + " scenarios\n" + text);
  const check::Scenario& t = again[0];
  FUZZ_CHECK(t.name == s.name, "name changed: " + text);
  FUZZ_CHECK(t.description == s.description, "description changed: " + text);
  FUZZ_CHECK(same_batch(t.batch, s.batch), "batch changed: " + text);
  FUZZ_CHECK(same_expected(t.expected, s.expected), "expected block changed: " + text);
}

void plan(const check::Scenario& s) {
  const Batch& b = s.batch;
  const PlanShape shape = plan_shape(b);
  if (!shape.feasible) {  // refused before any table is allocated, so any size is cheap
    uint64_t ref_min = 0, fast_min = 0;
    try {
      plan_reference(b);
      mlaplan_fuzz::fail(__FILE__, __LINE__, "plan_reference planned an infeasible batch");
    } catch (const InfeasibleBatch& e) {
      ref_min = e.min_max_chunks();
    }
    FUZZ_UNEXPECTED("plan_reference (infeasible)")
    try {
      plan_fast_cpu(b);
      mlaplan_fuzz::fail(__FILE__, __LINE__, "plan_fast_cpu planned an infeasible batch");
    } catch (const InfeasibleBatch& e) {
      fast_min = e.min_max_chunks();
    }
    FUZZ_UNEXPECTED("plan_fast_cpu (infeasible)")
    FUZZ_CHECK(ref_min == fast_min && ref_min == shape.min_max_chunks,
               "min_max_chunks differ: reference " + std::to_string(ref_min) + ", fast " + std::to_string(fast_min) +
                   ", shape " + std::to_string(shape.min_max_chunks));
    FUZZ_CHECK(shape.min_max_chunks > b.max_chunks, "refused although min_max_chunks <= max_chunks");
    return;
  }
  if (uint64_t{b.max_chunks} * (uint64_t{b.batch_size()} + 1) > kMaxCells) return;
  const PlanTables ref = mlaplan_fuzz::check_feasible_plan(b, io::scenario_to_json(s));
  if (s.expected) {
    try {
      (void)check::check_expected(*s.expected, ref);  // any verdict; it must only not crash
    }
    FUZZ_UNEXPECTED("check_expected")
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<check::Scenario> scenarios;
  try {
    scenarios = io::parse_scenarios(text, "fuzz.json", "fuzz");
  } catch (const InputError& e) {
    FUZZ_CHECK(mlaplan_fuzz::names_file(e.what(), "fuzz.json"), std::string("error message: ") + e.what());
    return 0;
  }
  FUZZ_UNEXPECTED("parse_scenarios")
  for (const check::Scenario& s : scenarios) {
    try {
      validate_batch(s.batch);
    } catch (const std::exception& e) {
      mlaplan_fuzz::fail(__FILE__, __LINE__, std::string("an accepted scenario fails validate_batch: ") + e.what());
    }
    round_trip(s);
    plan(s);
  }
  return 0;
}
