// The planner's three output tables, row-major by chunk, as the seed lays them out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mlaplan {

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
