#include "mlaplan/check/table_diff.hpp"

#include <fmt/format.h>

#include <tuple>

namespace mlaplan::check {

std::string CellMismatch::describe() const {
  if (sequence) return fmt::format("chunk {}, sequence {}: {} expected {}, got {}", chunk, *sequence, table, expected, actual);
  return fmt::format("chunk {}: {} expected {}, got {}", chunk, table, expected, actual);
}

std::string TableDiff::describe() const {
  if (!shape_error.empty()) return shape_error;
  if (!first) return "tables match";
  return fmt::format("{} (differing cells: buffer_row_offsets {}, cache_offsets {}, buffer_lengths {})",
                     first->describe(), buffer_row_offsets, cache_offsets, buffer_lengths);
}

namespace {

// Keeps the earliest mismatch by (chunk, sequence); buffer_lengths sorts before the chunk's cells.
void keep_earliest(std::optional<CellMismatch>& first, CellMismatch candidate) {
  auto key = [](const CellMismatch& m) {
    return std::make_tuple(m.chunk, m.sequence ? int64_t{*m.sequence} : int64_t{-1});
  };
  if (!first || key(candidate) < key(*first)) first = std::move(candidate);
}

template <typename T>
uint64_t diff_matrix(const char* name, const std::vector<T>& want, const std::vector<T>& got, uint32_t columns,
                     std::optional<CellMismatch>& first) {
  uint64_t count = 0;
  bool seen = false;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == got[i]) continue;
    ++count;
    if (seen) continue;
    seen = true;
    CellMismatch m;
    m.table = name;
    m.chunk = static_cast<uint32_t>(columns ? i / columns : i);
    if (columns) m.sequence = static_cast<uint32_t>(i % columns);
    m.expected = want[i];
    m.actual = got[i];
    keep_earliest(first, std::move(m));
  }
  return count;
}

}  // namespace

TableDiff diff_tables(const PlanTables& expected, const PlanTables& actual) {
  TableDiff d;
  const size_t m = expected.max_chunks, b = expected.batch_size;
  if (actual.batch_size != expected.batch_size || actual.max_chunks != expected.max_chunks) {
    d.shape_error = fmt::format("shape differs: expected {} chunks x {} sequences, got {} x {}", expected.max_chunks,
                                expected.batch_size, actual.max_chunks, actual.batch_size);
    return d;
  }
  auto check_size = [&](const char* name, size_t want, size_t got) {
    if (d.shape_error.empty() && got != want)
      d.shape_error = fmt::format("{}: expected {} values, got {}", name, want, got);
  };
  check_size("buffer_row_offsets", m * (b + 1), actual.buffer_row_offsets.size());
  check_size("cache_offsets", m * b, actual.cache_offsets.size());
  check_size("buffer_lengths", m, actual.buffer_lengths.size());
  check_size("buffer_row_offsets", m * (b + 1), expected.buffer_row_offsets.size());
  check_size("cache_offsets", m * b, expected.cache_offsets.size());
  check_size("buffer_lengths", m, expected.buffer_lengths.size());
  if (!d.shape_error.empty()) return d;

  d.buffer_row_offsets = diff_matrix("buffer_row_offsets", expected.buffer_row_offsets, actual.buffer_row_offsets,
                                     static_cast<uint32_t>(b + 1), d.first);
  d.cache_offsets = diff_matrix("cache_offsets", expected.cache_offsets, actual.cache_offsets,
                                static_cast<uint32_t>(b), d.first);
  d.buffer_lengths = diff_matrix("buffer_lengths", expected.buffer_lengths, actual.buffer_lengths, 0, d.first);
  return d;
}

}  // namespace mlaplan::check
