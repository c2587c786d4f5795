// Device-side pieces of the plan that both kernels share: a sequence's padded length and the
// batch's status (the same feasibility rule as lib/plan_shape.cpp), so the two kernels and the
// CPU refuse exactly the same batches.
#pragma once

#include <cstdint>

#include "mlaplan/device_plan.hpp"

namespace mlaplan::cuda_detail {

// The division is out of line: inlined at every length it would bloat the kernels' code, which
// every block fetches into a cold instruction cache (measured: docs/performance.md).
inline __device__ __noinline__ uint64_t pad_by_division(uint64_t raw, uint32_t page_size) {
  return (raw + page_size - 1) / page_size * page_size;
}

// align_up(raw, P) in 64 bits. Page sizes are powers of two in practice (the seed's is a
// compile-time constant): a mask then, not a 64-bit division, which would dominate the seed
// kernel's O(B^2) prefix loop.
__device__ __forceinline__ uint64_t pad_to_pages(uint64_t raw, uint32_t page_size) {
  if ((page_size & (page_size - 1)) == 0) return (raw + page_size - 1) & ~uint64_t{page_size - 1};
  return pad_by_division(raw, page_size);
}

// L[b] = align_up(cache_lengths[b] + input_len[b], P) in 64 bits, so nothing wraps. `bad` is set
// when the offsets decrease at b (the length then is garbage, and the status says so).
__device__ __forceinline__ uint64_t padded_length(const uint32_t* __restrict__ offsets,
                                                  const uint32_t* __restrict__ cache_lengths, uint64_t b,
                                                  uint32_t page_size, bool& bad) {
  const uint32_t lo = offsets[b];
  const uint32_t hi = offsets[b + 1];
  bad = hi < lo;
  return pad_to_pages(uint64_t{cache_lengths[b]} + (hi - lo), page_size);
}

// The status of a batch with padded total E whose last sequence starts at last_start.
__device__ __forceinline__ DevicePlanStatus batch_status(uint32_t batch_size, uint64_t padded_tokens,
                                                         uint64_t last_start, bool bad_offsets,
                                                         uint32_t buffer_token_size, uint32_t max_chunks) {
  DevicePlanStatus s;
  const uint64_t n = buffer_token_size;
  // 32-bit division where E fits (every plan but an overflowing one): a fraction of the 64-bit one.
  const uint64_t chunks_used = padded_tokens <= UINT32_MAX - n + 1
                                   ? (static_cast<uint32_t>(padded_tokens) + (buffer_token_size - 1)) / buffer_token_size
                                   : (padded_tokens + n - 1) / n;
  const bool starts_at_end = batch_size > 0 && last_start >= chunks_used * n;
  uint64_t min_chunks = chunks_used + (starts_at_end ? 1 : 0);
  if (min_chunks < 1) min_chunks = 1;
  s.min_max_chunks = min_chunks > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(min_chunks);  // saturates
  s.padded_tokens = padded_tokens;
  if (bad_offsets) {
    s.code = kPlanBadOffsets;
  } else if (padded_tokens > UINT32_MAX) {
    s.code = kPlanOverflow;
  } else if (min_chunks > max_chunks) {
    s.code = kPlanInfeasible;
  } else {
    s.code = kPlanOk;
  }
  return s;
}

// buffer_lengths[c] for a feasible plan; -1 for every chunk of a refused one. An empty batch gets
// 0 in every chunk, like the seed's empty-batch kernel.
__device__ __forceinline__ int32_t chunk_length(uint32_t c, uint32_t batch_size, uint64_t padded_tokens,
                                                uint32_t buffer_token_size, bool ok) {
  if (!ok) return -1;
  if (batch_size == 0) return 0;
  const uint64_t begin = uint64_t{c} * buffer_token_size;
  if (padded_tokens <= begin) return -1;
  const uint64_t rest = padded_tokens - begin;
  return static_cast<int32_t>(rest < buffer_token_size ? rest : buffer_token_size);
}

}  // namespace mlaplan::cuda_detail
