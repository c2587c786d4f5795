#include "mlaplan/check/scenario.hpp"

#include <fmt/format.h>

#include "mlaplan/plan_shape.hpp"
#include "mlaplan/check/table_diff.hpp"

namespace mlaplan::check {

std::string Scenario::locate(const std::string& field_message) const {
  const std::string where = file.empty() ? fmt::format("scenario {}", name) : file;
  return fmt::format("{}: {}{}", where, field_prefix, field_message);
}

std::optional<std::string> check_expected(const ExpectedPlan& expected, const PlanTables& tables) {
  if (expected.infeasible) return std::string("expected: the scenario is marked infeasible, but a plan was produced");
  // Compare only the given tables: substitute the actual table for any that is absent.
  PlanTables want = tables;
  if (expected.buffer_row_offsets) want.buffer_row_offsets = *expected.buffer_row_offsets;
  if (expected.cache_offsets) want.cache_offsets = *expected.cache_offsets;
  if (expected.buffer_lengths) want.buffer_lengths = *expected.buffer_lengths;
  const TableDiff d = diff_tables(want, tables);
  if (!d.equal()) return "expected: " + d.describe();
  if (expected.padded_tokens || expected.chunks_used) {
    uint64_t e = 0, used = 0;
    for (int32_t len : tables.buffer_lengths) {
      if (len <= 0) continue;
      e += static_cast<uint64_t>(len);
      ++used;
    }
    if (expected.padded_tokens && *expected.padded_tokens != e)
      return fmt::format("expected.padded_tokens: expected {}, got {}", *expected.padded_tokens, e);
    if (expected.chunks_used && *expected.chunks_used != used)
      return fmt::format("expected.chunks_used: expected {}, got {}", *expected.chunks_used, used);
  }
  return std::nullopt;
}

}  // namespace mlaplan::check
