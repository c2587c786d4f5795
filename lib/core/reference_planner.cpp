#include "mlaplan/reference_planner.hpp"

#include <algorithm>

#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"

namespace mlaplan {

PlanTables plan_reference(const Batch& batch, const std::atomic<bool>* stop) {
  require_feasible(batch);
  const uint32_t B = batch.batch_size();
  const uint32_t M = batch.max_chunks;
  const uint64_t N = batch.buffer_token_size;
  PlanTables t(B, M);

  if (B == 0) {  // the seed's empty-batch kernel: lengths are 0, not -1
    std::fill(t.buffer_lengths.begin(), t.buffer_lengths.end(), 0);
    return t;
  }

  // S[b] is kept as a running sum instead of the seed's per-thread re-summation: same values.
  uint64_t S = 0;
  for (uint32_t b = 0; b < B; ++b) {
    if (stop && stop->load(std::memory_order_relaxed)) throw Interrupted("interrupted while planning");
    const uint64_t L = batch.padded_length(b);
    const uint64_t start_chunk = S / N;
    uint64_t processed = 0;
    uint64_t left = L;
    for (uint32_t c = 0; c < M; ++c) {
      uint64_t offset;
      if (c < start_chunk) {
        offset = N;
      } else if (c == start_chunk) {
        offset = S % N;
      } else {
        offset = 0;
      }
      t.row_offset(c, b) = static_cast<uint32_t>(offset);
      t.cache_offset(c, b) = static_cast<uint32_t>(processed);
      const uint64_t n = std::min(left, N - offset);
      processed += n;
      left -= n;
    }
    S += L;
  }

  const uint64_t E = S;
  const int64_t end_chunk = static_cast<int64_t>((E + N - 1) / N) - 1;
  for (uint32_t c = 0; c < M; ++c) {
    if (c < end_chunk) {
      t.row_offset(c, B) = static_cast<uint32_t>(N);
      t.buffer_lengths[c] = static_cast<int32_t>(N);
    } else if (c == end_chunk) {
      t.row_offset(c, B) = static_cast<uint32_t>(E - c * N);
      t.buffer_lengths[c] = static_cast<int32_t>(E - c * N);
    } else {
      t.row_offset(c, B) = 0;
      t.buffer_lengths[c] = -1;
    }
  }
  return t;
}

}  // namespace mlaplan
