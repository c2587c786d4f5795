// A batch to plan: the planner's inputs, exactly as semantics.md names them.
#pragma once

#include <cstdint>
#include <vector>

namespace mlaplan {

struct Batch {
  uint32_t page_size = 1;          // P >= 1
  uint32_t buffer_token_size = 1;  // N >= 1, below 2^31
  uint32_t max_chunks = 1;         // M >= 1
  std::vector<uint32_t> cache_lengths;      // B values
  std::vector<uint32_t> input_row_offsets;  // B + 1 values, non-decreasing

  uint32_t batch_size() const { return static_cast<uint32_t>(cache_lengths.size()); }
  uint32_t input_length(uint32_t b) const { return input_row_offsets[b + 1] - input_row_offsets[b]; }
  // L[b] = align_up(cache_lengths[b] + input_len[b], P), in 64 bits so nothing wraps.
  uint64_t padded_length(uint32_t b) const {
    const uint64_t raw = uint64_t{cache_lengths[b]} + input_length(b), p = page_size;
    // Pages are powers of two in practice: a mask instead of a division (a sweep pads every
    // sequence of every batch at every buffer size).
    return (p & (p - 1)) == 0 ? (raw + p - 1) & ~(p - 1) : (raw + p - 1) / p * p;
  }
};

// Largest number of table cells (max_chunks x (batch_size + 1)) a host-side plan may hold;
// beyond it the tables alone would need more than 8 GiB each.
inline constexpr uint64_t kMaxTableCells = uint64_t{1} << 31;

// Checks everything about a batch except feasibility: array sizes, ordering, ranges and the
// 32-bit width of every derived value. Throws InputError naming the field and the fix.
void validate_batch(const Batch& batch);

}  // namespace mlaplan
