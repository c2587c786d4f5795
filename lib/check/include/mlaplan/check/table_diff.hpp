// Cell-by-cell comparison of two plans: which cell differs first and how many differ per table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mlaplan/plan_tables.hpp"

namespace mlaplan::check {

struct CellMismatch {
  std::string table;                 // "buffer_row_offsets", "cache_offsets" or "buffer_lengths"
  uint32_t chunk = 0;
  std::optional<uint32_t> sequence;  // absent for buffer_lengths
  int64_t expected = 0;
  int64_t actual = 0;

  // `chunk 3, sequence 17: buffer_row_offsets expected 512, got 0`
  std::string describe() const;
};

struct TableDiff {
  std::string shape_error;  // non-empty when the dimensions differ; no cells are compared then
  std::optional<CellMismatch> first;  // the earliest differing cell by (chunk, sequence)
  uint64_t buffer_row_offsets = 0;    // differing cells per table
  uint64_t cache_offsets = 0;
  uint64_t buffer_lengths = 0;

  bool equal() const { return shape_error.empty() && !first; }
  // One line: the first cell and the counts, or the shape error.
  std::string describe() const;
};

TableDiff diff_tables(const PlanTables& expected, const PlanTables& actual);

}  // namespace mlaplan::check
