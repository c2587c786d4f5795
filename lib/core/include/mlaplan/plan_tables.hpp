// The planner's three output tables, row-major by chunk, as the seed lays them out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "mlaplan/batch.hpp"

namespace mlaplan {

// Bytes of the three tables of B sequences in `chunk_rows` chunks: M x (B+1) + M x B + M cells of
// 4 bytes, that is 8 x M x (B+1); saturates at 2^64 - 1. Every memory budget (run, verify, sweep,
// bench, gen) sizes tables with this one function.
constexpr uint64_t table_bytes(uint64_t batch_size, uint64_t chunk_rows) {
  const uint64_t columns = batch_size + 1;
  if (chunk_rows != 0 && columns > std::numeric_limits<uint64_t>::max() / 8 / chunk_rows)
    return std::numeric_limits<uint64_t>::max();
  return 8 * chunk_rows * columns;
}
// The tables of a batch as the max planners write them: max_chunks rows.
inline uint64_t table_bytes(const Batch& batch) { return table_bytes(batch.batch_size(), batch.max_chunks); }

// The memory the tables a command plans may take unless --memory-limit says otherwise: 2 GiB.
inline constexpr uint64_t kDefaultMemoryLimit = uint64_t{2} << 30;

struct PlanTables {
  uint32_t batch_size = 0;  // B
  uint32_t max_chunks = 0;  // M
  std::vector<uint32_t> buffer_row_offsets;  // M x (B + 1)
  std::vector<uint32_t> cache_offsets;       // M x B
  std::vector<int32_t> buffer_lengths;       // M

  PlanTables() = default;
  PlanTables(uint32_t b, uint32_t m)
      : batch_size(b),
        max_chunks(m),
        buffer_row_offsets(size_t{m} * (size_t{b} + 1)),
        cache_offsets(size_t{m} * b),
        buffer_lengths(m) {}

  uint32_t& row_offset(uint32_t c, uint32_t b) { return buffer_row_offsets[size_t{c} * (batch_size + size_t{1}) + b]; }
  uint32_t row_offset(uint32_t c, uint32_t b) const { return buffer_row_offsets[size_t{c} * (batch_size + size_t{1}) + b]; }
  uint32_t& cache_offset(uint32_t c, uint32_t b) { return cache_offsets[size_t{c} * batch_size + b]; }
  uint32_t cache_offset(uint32_t c, uint32_t b) const { return cache_offsets[size_t{c} * batch_size + b]; }

  bool operator==(const PlanTables& o) const {
    return batch_size == o.batch_size && max_chunks == o.max_chunks && buffer_row_offsets == o.buffer_row_offsets &&
           cache_offsets == o.cache_offsets && buffer_lengths == o.buffer_lengths;
  }
  bool operator!=(const PlanTables& o) const { return !(*this == o); }
};

}  // namespace mlaplan
