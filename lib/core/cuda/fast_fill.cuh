// The fast kernel's fill: the stores of both tables' cells once a block knows S and L of its
// columns. The one-block kernel's flattened rows x columns (write_narrow, write_sentinel), and the
// tile kernel's rows of aligned 16-byte vectors from shared memory (store_rows). Included by
// fast_kernel.cu.
#pragma once

#include <cstdint>

#include "fast_policy.hpp"
#include "mlaplan/device_plan.hpp"
#include "plan_math.cuh"

namespace mlaplan::cuda_detail::fast {

__device__ __forceinline__ uint64_t min64(uint64_t x, uint64_t y) { return x < y ? x : y; }

// Writes rows [c0, c1) x the batch's n_cols columns of both tables for the one-block kernel (the
// batch no wider than the block): rows x columns are flattened over the threads so that many chunk
// rows are written at once, and (c, col) advance by the block size without a division per cell.
template <int kBlock>
__device__ __forceinline__ void write_narrow(const DevicePlanArgs& a, const uint32_t* s_start, const uint32_t* s_len,
                                             uint32_t n_cols, uint64_t c0, uint64_t c1) {
  const uint64_t n = a.buffer_token_size;
  const uint64_t pitch = uint64_t{a.batch_size} + 1;
  const uint32_t step_c = kBlock / n_cols;
  const uint32_t step_col = kBlock % n_cols;
  uint64_t c = c0 + threadIdx.x / n_cols;
  uint32_t col = threadIdx.x % n_cols;
  while (c < c1) {
    const uint64_t cn = c * n;
    const uint64_t sb = s_start[col];
    a.buffer_row_offsets[c * pitch + col] = sb >= cn ? static_cast<uint32_t>(min64(sb - cn, n)) : 0u;
    a.cache_offsets[c * a.batch_size + col] = cn > sb ? static_cast<uint32_t>(min64(cn - sb, s_len[col])) : 0u;
    c += step_c;
    col += step_col;
    if (col >= n_cols) {
      col -= n_cols;
      ++c;
    }
  }
}

// The sentinel column (S[B] = E) and the chunk lengths of rows [c0, c1), one chunk row per thread.
template <int kBlock>
__device__ __forceinline__ void write_sentinel(const DevicePlanArgs& a, uint64_t total, bool ok, uint64_t c0, uint64_t c1) {
  const uint64_t n = a.buffer_token_size;
  const uint64_t pitch = uint64_t{a.batch_size} + 1;
  for (uint64_t c = c0 + threadIdx.x; c < c1; c += kBlock) {
    const uint64_t cn = c * n;
    a.buffer_row_offsets[c * pitch + a.batch_size] = total >= cn ? static_cast<uint32_t>(min64(total - cn, n)) : 0u;
    a.buffer_lengths[c] = chunk_length(static_cast<uint32_t>(c), a.batch_size, total, a.buffer_token_size, ok);
  }
}

// The two tables' cells from S, L and c*N saturated to 32 bits (past 2^32 - 1 it only needs to
// stay above every S, which an ok plan keeps below 2^32): 3 instructions each.
__device__ __forceinline__ uint32_t row_offset_cell(uint32_t s, uint32_t cn, uint32_t n) {
  return min(max(s, cn) - cn, n);  // clamp(S - cN, 0, N)
}
__device__ __forceinline__ uint32_t cache_offset_cell(uint32_t s, uint32_t l, uint32_t cn) {
  return min(max(cn, s) - s, l);  // clamp(cN - S, 0, L)
}
__device__ __forceinline__ uint32_t saturate32(uint64_t x) { return x > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(x); }

// One table of the fill, as a block sees it: where its rows start and at which phase (elements
// past a kAlign boundary), and the tile columns [lo, hi] whose cells are this block's.
struct FillTable {
  uint32_t* row;  // the tile's column 0 in row 0 (store_rows steps from it)
  uint64_t pitch;
  uint64_t phase0;  // the table's first element, in elements (mod kAlign is its phase)
  int32_t lo, hi;
  int32_t tail_hi;  // the last tile: the first warp also stores the cells past every vector, up to here
};

template <bool kCache>
__device__ __forceinline__ uint32_t cell(uint32_t s, uint32_t l, uint32_t cn, uint32_t n) {
  return kCache ? cache_offset_cell(s, l, cn) : row_offset_cell(s, cn, n);
}

// One row's cells of tile columns [first, first + 4) from S and L in shared memory: a 16-byte
// store, or cell by cell at the ends of a row (the first tile's, or past the table's last column).
// Large tables (kAlign == kLargeAlign) are stored streaming (evict first): they do not fit in L2.
template <bool kCache, int kAlign>
__device__ __forceinline__ void store_vector(const FillTable& t, uint32_t* row, int32_t first, uint32_t cn, uint32_t n,
                                             const uint32_t* s_start, const uint32_t* s_len) {
  uint32_t v[kRun];
#pragma unroll
  for (int k = 0; k < kRun; ++k) {
    const int32_t i = first + k + kHalo;
    v[k] = cell<kCache>(s_start[i], kCache ? s_len[i] : 0u, cn, n);
  }
  uint32_t* p = row + first;
  if (first >= t.lo && first + kRun - 1 <= t.hi) {
    const uint4 x = make_uint4(v[0], v[1], v[2], v[3]);
    if (kAlign == kLargeAlign)
      __stcs(reinterpret_cast<uint4*>(p), x);
    else
      *reinterpret_cast<uint4*>(p) = x;
  } else {
#pragma unroll
    for (int k = 0; k < kRun; ++k)
      if (first + k >= t.lo && first + k <= t.hi) p[k] = v[k];
  }
}

// The last tile's cells past every thread's vector in one row (at most kAlign), by the first warp.
template <bool kCache>
__device__ __forceinline__ void store_tail(const FillTable& t, uint32_t* row, int32_t shift, uint32_t cn, uint32_t n,
                                           const uint32_t* s_start, const uint32_t* s_len) {
  for (int32_t col = static_cast<int32_t>(kTile) - shift + static_cast<int32_t>(threadIdx.x); col <= t.tail_hi; col += 32)
    row[col] = cell<kCache>(s_start[col + kHalo], s_len[col + kHalo], cn, n);
}

// Rows [c0, c1) of both tables. Row by row, each row's cells of both runs and both tables, so that
// each block writes 8 KB runs of each table in step with the others (faster than storing one run's
// column through every row first: docs/performance.md). A row that starts `shift`
// elements past a kAlign boundary has each thread's vectors cover its columns shifted back by
// `shift`, so the block's range of that row is aligned; the cells come from shared memory.
template <int kAlign>
__device__ __forceinline__ void store_rows(FillTable rows, FillTable cache, uint32_t c0, uint32_t c1, uint32_t n,
                                           const uint32_t* s_start, const uint32_t* s_len) {
  constexpr uint32_t kMask = kAlign - 1;
  uint32_t* pr = rows.row + c0 * rows.pitch;
  uint32_t* pq = cache.row + c0 * cache.pitch;
  auto shift_r = static_cast<uint32_t>((rows.phase0 + c0 * rows.pitch) & kMask);
  auto shift_q = static_cast<uint32_t>((cache.phase0 + c0 * cache.pitch) & kMask);
  const auto step_r = static_cast<uint32_t>(rows.pitch & kMask), step_q = static_cast<uint32_t>(cache.pitch & kMask);
  const auto col = static_cast<int32_t>(kRun * threadIdx.x);
  const bool tail = threadIdx.x < 32 && (rows.tail_hi >= 0 || cache.tail_hi >= 0);
#pragma unroll 1
  for (uint32_t c = c0; c < c1; ++c) {
    const uint32_t cn = saturate32(uint64_t{c} * n);
#pragma unroll
    for (int j = 0; j < kRuns; ++j)
      store_vector<false, kAlign>(rows, pr, col + j * kRunStride - shift_r, cn, n, s_start, s_len);
#pragma unroll
    for (int j = 0; j < kRuns; ++j)
      store_vector<true, kAlign>(cache, pq, col + j * kRunStride - shift_q, cn, n, s_start, s_len);
    if (tail) {
      store_tail<false>(rows, pr, shift_r, cn, n, s_start, s_len);
      store_tail<true>(cache, pq, shift_q, cn, n, s_start, s_len);
    }
    pr += rows.pitch;
    pq += cache.pitch;
    shift_r = (shift_r + step_r) & kMask;
    shift_q = (shift_q + step_q) & kMask;
  }
}

}  // namespace mlaplan::cuda_detail::fast
