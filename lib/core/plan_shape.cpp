#include "mlaplan/plan_shape.hpp"

#include <string>

#include "mlaplan/errors.hpp"

namespace mlaplan {

PlanShape plan_shape(const Batch& batch) {
  PlanShape shape;
  const uint32_t b_count = batch.batch_size();
  const uint64_t n = batch.buffer_token_size;
  uint64_t start = 0;
  for (uint32_t b = 0; b < b_count; ++b) {
    shape.last_start = start;
    start += batch.padded_length(b);
    shape.input_tokens += uint64_t{batch.cache_lengths[b]} + batch.input_length(b);
  }
  shape.padded_tokens = start;
  shape.chunks_used = (shape.padded_tokens + n - 1) / n;
  // A sequence may not start at or past the capacity: that happens only when E is a whole number
  // of chunks and trailing sequences are empty (S[B-1] == E), which then needs one chunk more.
  const bool starts_at_end = b_count > 0 && shape.last_start >= shape.chunks_used * n;
  shape.min_max_chunks = shape.chunks_used + (starts_at_end ? 1 : 0);
  if (shape.min_max_chunks < 1) shape.min_max_chunks = 1;
  shape.feasible = shape.min_max_chunks <= batch.max_chunks;
  return shape;
}

PlanShape require_feasible(const Batch& batch) {
  const PlanShape shape = plan_shape(batch);
  if (shape.feasible) return shape;
  const uint64_t m = batch.max_chunks;
  const uint64_t n = batch.buffer_token_size;
  std::string why;
  if (shape.padded_tokens > m * n) {
    why = std::to_string(shape.padded_tokens) + " padded tokens need " + std::to_string(shape.chunks_used) +
          " chunks of " + std::to_string(n) + " rows";
  } else {
    why = std::to_string(shape.padded_tokens) + " padded tokens fill all " + std::to_string(m) + " chunks of " +
          std::to_string(n) + " rows exactly and an empty trailing sequence would start at row " +
          std::to_string(shape.last_start) + ", past the last chunk";
  }
  // The smallest buffer that fits in the current max_chunks, for the other way out.
  uint64_t min_n = (shape.padded_tokens + m - 1) / m;
  if (min_n == 0) min_n = 1;
  if (shape.last_start >= m * min_n) ++min_n;
  const std::string alt = min_n <= 0x7fffffffu ? " or buffer_token_size to at least " + std::to_string(min_n) : "";
  throw InfeasibleBatch("max_chunks: infeasible batch: " + why + ", but max_chunks is " + std::to_string(m) +
                            "; set max_chunks to at least " + std::to_string(shape.min_max_chunks) + alt,
                        shape.min_max_chunks);
}

}  // namespace mlaplan
