// libFuzzer target: the reader of `verify --plan TABLES.json` (parse_plan_tables, which
// load_plan_tables calls on the file's text). The first bytes give the scenario's shape: byte 0 the
// batch size B (0..64), byte 1 max_chunks M (0..64), bytes 2 and 3 the batch's lengths; the rest is
// the file's text. Tables that load must have exactly the shape M x (B+1), M x B, M; written back
// as `run --format json` writes them they must load again unchanged; and check_tables and
// check_plan_claims (the judges of `verify --plan`) must give a verdict on them without crashing. A rejection (InputError) is normal.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_check.hpp"
#include "mlaplan/check/case_check.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/profile/phase_timer.hpp"
#include "mlaplan/io/plan_report.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/io/plan_tables_io.hpp"
#include "mlaplan/check/scenario.hpp"

using namespace mlaplan;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const uint32_t B = data[0] % 65, M = data[1] % 65;
  const uint8_t a = data[2], c = data[3];
  const std::string text(reinterpret_cast<const char*>(data) + 4, size - 4);
  const std::string path = "fuzz-plan.json";

  io::LoadedPlan loaded;
  try {
    loaded = io::parse_plan_tables(text, path, B, M);
  } catch (const InputError& e) {
    FUZZ_CHECK(mlaplan_fuzz::names_file(e.what(), path), std::string("error message: ") + e.what());
    return 0;
  }
  FUZZ_UNEXPECTED("parse_plan_tables")

  if (loaded.tables) {  // else refused ({"infeasible": true}, no problem) or of the wrong shape (a problem)
    const PlanTables& t = *loaded.tables;
    FUZZ_CHECK(loaded.problem.empty(), "tables and a problem: " + loaded.problem);
    FUZZ_CHECK(t.batch_size == B && t.max_chunks == M, "shape fields");
    FUZZ_CHECK(t.buffer_row_offsets.size() == size_t{M} * (B + 1), "buffer_row_offsets size");
    FUZZ_CHECK(t.cache_offsets.size() == size_t{M} * B, "cache_offsets size");
    FUZZ_CHECK(t.buffer_lengths.size() == M, "buffer_lengths size");
  }
  if (M == 0) return 0;  // no scenario has max_chunks 0: the reader alone is exercised

  // A small scenario of this shape: page size 1..4, buffer 1..16, lengths 0..7 from bytes 2 and 3.
  check::Scenario s;
  s.name = "fuzz";
  s.file = "fuzz.json";
  s.batch.page_size = 1 + (a & 3);
  s.batch.buffer_token_size = 1 + (c & 15);
  s.batch.max_chunks = M;
  s.batch.input_row_offsets.push_back(0);
  for (uint32_t b = 0; b < B; ++b) {
    s.batch.cache_lengths.push_back((a >> 2) * (b + 1) % 8);
    s.batch.input_row_offsets.push_back(s.batch.input_row_offsets.back() + (c >> 4) * (b + 3) % 8);
  }
  validate_batch(s.batch);

  if (loaded.tables) {
    // Written back as `run --format json` writes them, the tables read back the same.
    io::PlanReport report;
    report.scenario = &s;
    report.backend = "cpu";
    report.planner = "fuzz";
    report.shape = plan_shape(s.batch);
    report.tables = *loaded.tables;
    const std::string json = io::format_plan_json(report);
    io::LoadedPlan again;
    try {
      again = io::parse_plan_tables(json, path, B, M);
    }
    FUZZ_UNEXPECTED("re-reading the tables as run --format json writes them")
    FUZZ_CHECK(again.tables && again.problem.empty() && *again.tables == *loaded.tables,
               "tables changed on the way through format_plan_json: " + again.problem + "\n" + json);
  }

  profile::PhaseTimer timer;
  check::CaseResult r;
  try {
    r = check::check_tables(s, loaded.tables, timer);
  }
  FUZZ_UNEXPECTED("check_tables")
  FUZZ_CHECK(r.passed || !r.detail.empty(), "a failed case without a reason");

  // The judge verify --plan uses, with the facts the file states beside the tables.
  io::PlanFile file;
  try {
    file = io::parse_plan_file(text, path);
    r = check::check_plan_claims(s, loaded.tables, file.plans.at(0).claims, timer);
  }
  FUZZ_UNEXPECTED("check_plan_claims")
  FUZZ_CHECK(r.passed || !r.detail.empty(), "a failed claims check without a reason");
  return 0;
}
