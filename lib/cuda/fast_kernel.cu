// The fast planning kernel: O(B + M*B) work with coalesced writes, for any batch size and chunk
// count. The plan has a closed form (semantics.md, "Properties"): with S[b] the exclusive prefix
// sum of the padded lengths L[b] and S[B] = E,
//   buffer_row_offsets[c][b] = clamp(S[b] - c*N, 0, N),  cache_offsets[c][b] = clamp(c*N - S[b], 0, L[b]),
// so once a block knows S for its columns, every table cell is independent and the kernel is a
// scan followed by a bandwidth-bound fill.
//
// Batches of one tile (B <= kTile) take a single launch: each block loads the whole batch, scans
// it (cub::BlockScan) and fills its slice of the chunk rows (below kThreads sequences, a leaner
// one-sequence-per-thread kernel, since such plans are pure launch latency). Larger batches reduce-then-fill:
// a reduce launch writes each tile's sum to the workspace, and its last block to finish (an
// atomic ticket) scans the tile sums into tile prefixes and writes the status; the fill launch
// then scans each tile locally from its prefix. The ticket counter is reset by that last block,
// so the workspace is zeroed once and self-resetting (graph replay safe).
//
// Chunks are parallel too: the grid is tiles x splits, each split owning a run of chunk rows, so a
// tiny batch with many chunks (B = 1, M = 4096) still spreads over many threads.
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <atomic>

#include "kernels.hpp"
#include "plan_math.cuh"

namespace mlaplan::cuda_detail {

namespace {

constexpr int kThreads = 256;
constexpr int kItems = 8;
constexpr uint32_t kTile = kThreads * kItems;  // columns (sequences) per tile
// A block should write at least this many cells of each table, or splitting costs more in
// redundant scans than it buys. (One block writing a whole small plan is limited by what one
// multiprocessor can store: B = 1024, M = 16 took 2x an empty launch with 16384 here.)
constexpr uint64_t kMinCellsPerBlock = 2048;
constexpr uint64_t kBadBit = uint64_t{1} << 63;  // a tile sum's flag: offsets decrease in this tile

// The multi-tile workspace: a header, then one 64-bit value per tile (its sum, then its prefix).
struct Workspace {
  unsigned int done_blocks;  // reduce blocks finished in this launch; reset to 0 by the last
  int32_t ok;                // the status said kPlanOk
  uint64_t padded_tokens;    // E
  uint64_t tiles[1];         // flexible: `tiles` values
};
constexpr size_t kWorkspaceHeader = offsetof(Workspace, tiles);

__device__ __forceinline__ uint64_t min64(uint64_t x, uint64_t y) { return x < y ? x : y; }

__host__ __device__ inline uint32_t tile_columns(uint32_t batch, uint64_t tile) {
  const uint64_t b0 = tile * kTile;
  const uint64_t rest = batch - b0;
  return static_cast<uint32_t>(rest < kTile ? rest : kTile);
}

// Padded lengths of one tile's columns in a striped arrangement (item k of thread t is column
// k * kThreads + t, so every load is coalesced); 0 past the batch. Returns "offsets decrease here".
// The thread that loads the tile's last column also stores its length in *last_len, so the
// status (which needs S[B-1] = E - L[B-1]) costs no second trip to global memory.
__device__ __forceinline__ bool load_striped(const DevicePlanArgs& a, uint64_t b0, uint32_t n_cols,
                                             uint64_t (&len)[kItems], uint64_t* last_len) {
  bool bad_any = false;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const uint32_t col = k * kThreads + threadIdx.x;
    len[k] = 0;
    if (col < n_cols) {
      bool bad;
      len[k] = padded_length(a.input_row_offsets, a.cache_lengths, b0 + col, a.page_size, bad);
      bad_any |= bad;
      if (col == n_cols - 1) *last_len = len[k];
    }
  }
  return bad_any;
}

// Writes rows [c0, c1) x the tile's n_cols columns of both tables when the tile is narrower than
// the block: rows x columns are flattened over the threads so that many chunk rows are written at
// once, and (c, col) advance by the block size without a division per cell.
__device__ __forceinline__ void write_narrow(const DevicePlanArgs& a, const uint32_t* s_start, const uint32_t* s_len,
                                             uint64_t b0, uint32_t n_cols, uint64_t c0, uint64_t c1) {
  const uint64_t n = a.buffer_token_size;
  const uint64_t pitch = uint64_t{a.batch_size} + 1;
  const uint32_t step_c = kThreads / n_cols;
  const uint32_t step_col = kThreads % n_cols;
  uint64_t c = c0 + threadIdx.x / n_cols;
  uint32_t col = threadIdx.x % n_cols;
  while (c < c1) {
    const uint64_t cn = c * n;
    const uint64_t sb = s_start[col];
    a.buffer_row_offsets[c * pitch + b0 + col] = sb >= cn ? static_cast<uint32_t>(min64(sb - cn, n)) : 0u;
    a.cache_offsets[c * a.batch_size + b0 + col] = cn > sb ? static_cast<uint32_t>(min64(cn - sb, s_len[col])) : 0u;
    c += step_c;
    col += step_col;
    if (col >= n_cols) {
      col -= n_cols;
      ++c;
    }
  }
}

// The sentinel column (S[B] = E) and the chunk lengths of rows [c0, c1), one chunk row per thread.
__device__ __forceinline__ void write_sentinel(const DevicePlanArgs& a, uint64_t total, bool ok, uint64_t c0, uint64_t c1) {
  const uint64_t n = a.buffer_token_size;
  const uint64_t pitch = uint64_t{a.batch_size} + 1;
  for (uint64_t c = c0 + threadIdx.x; c < c1; c += kThreads) {
    const uint64_t cn = c * n;
    a.buffer_row_offsets[c * pitch + a.batch_size] = total >= cn ? static_cast<uint32_t>(min64(total - cn, n)) : 0u;
    a.buffer_lengths[c] = chunk_length(static_cast<uint32_t>(c), a.batch_size, total, a.buffer_token_size, ok);
  }
}

// Batches of fewer than kThreads sequences, the latency-bound case: one sequence per thread and
// one block-wide scan, without the tile path's exchange and its extra barriers.
__global__ void __launch_bounds__(kThreads) fast_small_kernel(DevicePlanArgs a, uint32_t rows_per_split) {
  using BlockScan = cub::BlockScan<uint64_t, kThreads>;
  __shared__ typename BlockScan::TempStorage scan;
  __shared__ uint32_t s_start[kThreads];
  __shared__ uint32_t s_len[kThreads];
  __shared__ uint64_t s_total;
  __shared__ bool s_ok;

  const uint32_t batch = a.batch_size;
  const uint64_t c0 = uint64_t{blockIdx.x} * rows_per_split;
  const uint64_t c1 = c0 + rows_per_split < a.max_chunks ? c0 + rows_per_split : a.max_chunks;
  const uint32_t b = threadIdx.x;
  uint64_t len = 0;
  bool bad = false;
  if (b < batch) len = padded_length(a.input_row_offsets, a.cache_lengths, b, a.page_size, bad);
  uint64_t start, total;
  BlockScan(scan).ExclusiveSum(len, start, total);
  bad = __syncthreads_or(bad);
  s_start[b] = static_cast<uint32_t>(start);
  s_len[b] = static_cast<uint32_t>(len);
  if (b + 1 == (batch > 0 ? batch : 1)) {  // the last sequence's thread (thread 0 for B = 0)
    const DevicePlanStatus st = batch_status(batch, total, start, bad, a.buffer_token_size, a.max_chunks);
    if (blockIdx.x == 0) *a.status = st;
    s_total = total;
    s_ok = st.code == kPlanOk;
  }
  __syncthreads();
  if (batch > 0) write_narrow(a, s_start, s_len, 0, batch, c0, c1);
  write_sentinel(a, s_total, s_ok, c0, c1);
}

__global__ void __launch_bounds__(kThreads) fast_reduce_kernel(DevicePlanArgs a, Workspace* ws, uint32_t tiles) {
  using BlockReduce = cub::BlockReduce<uint64_t, kThreads>;
  using BlockScan = cub::BlockScan<uint64_t, kThreads>;
  __shared__ union {
    typename BlockReduce::TempStorage reduce;
    typename BlockScan::TempStorage scan;
  } temp;
  __shared__ bool is_last;
  __shared__ uint64_t s_last_len;

  const uint64_t tile = blockIdx.x;
  uint64_t len[kItems];
  const bool bad = __syncthreads_or(load_striped(a, tile * kTile, tile_columns(a.batch_size, tile), len, &s_last_len));
  const uint64_t sum = BlockReduce(temp.reduce).Sum(len);
  if (threadIdx.x == 0) {
    ws->tiles[tile] = sum | (bad ? kBadBit : 0);
    __threadfence();  // publish the sum before taking a ticket
    is_last = atomicAdd(&ws->done_blocks, 1u) == tiles - 1;
  }
  __syncthreads();
  if (!is_last) return;
  __threadfence();

  // The last block (of the launch, not necessarily the last tile): every tile sum is visible; turn them into exclusive prefixes, in rounds of
  // kTile tiles, reading through L2 (__ldcg) since other blocks wrote them.
  uint64_t running = 0;
  bool bad_any = false;
  for (uint64_t r0 = 0; r0 < tiles; r0 += kTile) {
    uint64_t v[kItems];
    bool bad_here = false;
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const uint64_t t = r0 + threadIdx.x * kItems + k;
      v[k] = 0;
      if (t < tiles) {
        const uint64_t x = __ldcg(&ws->tiles[t]);
        bad_here |= (x & kBadBit) != 0;
        v[k] = x & ~kBadBit;
      }
    }
    uint64_t aggregate;
    __syncthreads();  // the scan's temp storage is reused across rounds
    BlockScan(temp.scan).ExclusiveSum(v, v, aggregate);
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const uint64_t t = r0 + threadIdx.x * kItems + k;
      if (t < tiles) ws->tiles[t] = running + v[k];
    }
    running += aggregate;
    bad_any |= __syncthreads_or(bad_here);
  }
  if (threadIdx.x == 0) {
    const uint32_t batch = a.batch_size;
    // The last column belongs to the last tile, which this block need not have loaded.
    bool bad_last;
    const uint64_t last_len = padded_length(a.input_row_offsets, a.cache_lengths, batch - 1, a.page_size, bad_last);
    const DevicePlanStatus st =
        batch_status(batch, running, running - last_len, bad_any, a.buffer_token_size, a.max_chunks);
    *a.status = st;
    ws->ok = st.code == kPlanOk;
    ws->padded_tokens = running;
    ws->done_blocks = 0;  // self-reset for the next call on this workspace
  }
}

// One block: tile `blockIdx.x / splits`, chunk rows [c0, c1) of split `blockIdx.x % splits`.
template <bool kMultiTile>
__global__ void __launch_bounds__(kThreads)
    fast_fill_kernel(DevicePlanArgs a, const Workspace* ws, uint32_t splits, uint32_t rows_per_split) {
  using BlockExchange = cub::BlockExchange<uint64_t, kThreads, kItems>;
  using BlockScan = cub::BlockScan<uint64_t, kThreads>;
  __shared__ union {
    typename BlockExchange::TempStorage exchange;
    typename BlockScan::TempStorage scan;
  } temp;
  __shared__ uint32_t s_start[kTile];  // S[b] of the tile's columns (32 bits suffice when the plan is ok)
  __shared__ uint32_t s_len[kTile];    // L[b]
  __shared__ uint64_t s_total;
  __shared__ uint64_t s_last_len;
  __shared__ bool s_ok;

  const uint32_t batch = a.batch_size;
  const uint64_t tile = blockIdx.x / splits;
  const uint32_t split = blockIdx.x % splits;
  const uint64_t b0 = tile * kTile;
  const uint32_t n_cols = tile_columns(batch, tile);
  const bool last_tile = b0 + n_cols == batch;
  const uint64_t c0_wide = uint64_t{split} * rows_per_split;
  const uint64_t c1_wide = c0_wide + rows_per_split < a.max_chunks ? c0_wide + rows_per_split : a.max_chunks;
  const uint64_t n = a.buffer_token_size;
  // Issued first, so their latency overlaps the tile's loads.
  const uint64_t prefix = kMultiTile ? ws->tiles[tile] : 0;
  const uint64_t ws_total = kMultiTile && last_tile ? ws->padded_tokens : 0;
  const bool ws_ok = kMultiTile && last_tile ? ws->ok != 0 : false;
  if (n_cols == 0 && threadIdx.x == 0) s_last_len = 0;  // an empty batch has no last column

  // Scan the tile: striped loads, exchange to blocked, block-wide exclusive sum.
  uint64_t len[kItems];
  const bool bad = __syncthreads_or(load_striped(a, b0, n_cols, len, &s_last_len));
#pragma unroll
  for (int k = 0; k < kItems; ++k) s_len[k * kThreads + threadIdx.x] = static_cast<uint32_t>(len[k]);
  BlockExchange(temp.exchange).StripedToBlocked(len, len);
  __syncthreads();
  uint64_t aggregate;
  BlockScan(temp.scan).ExclusiveSum(len, len, aggregate);
#pragma unroll
  for (int k = 0; k < kItems; ++k) s_start[threadIdx.x * kItems + k] = static_cast<uint32_t>(prefix + len[k]);
  if (last_tile && threadIdx.x == 0) {
    if (kMultiTile) {  // the reduce launch judged the whole batch
      s_total = ws_total;
      s_ok = ws_ok;
    } else {  // this tile is the whole batch
      const uint64_t total = prefix + aggregate;
      const DevicePlanStatus st = batch_status(batch, total, total - s_last_len, bad, a.buffer_token_size, a.max_chunks);
      if (split == 0) *a.status = st;
      s_total = total;
      s_ok = st.code == kPlanOk;
    }
  }
  __syncthreads();

  uint32_t* __restrict__ row_offsets = a.buffer_row_offsets;
  uint32_t* __restrict__ cache_offsets = a.cache_offsets;
  const uint64_t pitch = uint64_t{batch} + 1;
  if (n_cols >= kThreads) {
    // Wide tile: each thread keeps its columns in registers as (start chunk k, offset r = S % N,
    // L), the seed's own form, so each cell costs a few 32-bit compares instead of 64-bit
    // clamps. Exact whenever the plan is ok (S < 2^32); a refused plan's cells are don't-care.
    const uint32_t n32 = a.buffer_token_size;
    uint32_t k_start[kItems], r[kItems], l[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const uint32_t col = k * kThreads + threadIdx.x;
      const uint32_t s = col < n_cols ? s_start[col] : 0;
      k_start[k] = s / n32;
      r[k] = s - k_start[k] * n32;
      l[k] = col < n_cols ? s_len[col] : 0;
    }
    for (uint64_t c = c0_wide; c < c1_wide; ++c) {
      uint32_t* ro = row_offsets + c * pitch + b0;
      uint32_t* co = cache_offsets + c * batch + b0;
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const uint32_t col = k * kThreads + threadIdx.x;
        if (col < n_cols) {
          ro[col] = c < k_start[k] ? n32 : c == k_start[k] ? r[k] : 0u;
          // Rows consumed before chunk c: (c - k) * N - r, capped at L.
          co[col] = c <= k_start[k] ? 0u : static_cast<uint32_t>(min64((c - k_start[k]) * n - r[k], l[k]));
        }
      }
    }
  } else if (n_cols > 0) {
    write_narrow(a, s_start, s_len, b0, n_cols, c0_wide, c1_wide);
  }

  if (last_tile) write_sentinel(a, s_total, s_ok, c0_wide, c1_wide);
}

}  // namespace

// Blocks of the fill kernel the current device runs at once, cached per device (a host query,
// no synchronisation, so still graph-capture safe).
uint64_t resident_fill_blocks() {
  static std::atomic<uint32_t> cache[64];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return 1024;
  uint32_t blocks = cache[device].load(std::memory_order_relaxed);
  if (blocks == 0) {
    int sms = 0, per_sm = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fast_fill_kernel<true>, kThreads, 0) != cudaSuccess)
      return 1024;
    blocks = static_cast<uint32_t>(std::max(1, sms * per_sm));
    cache[device].store(blocks, std::memory_order_relaxed);
  }
  return blocks;
}

size_t fast_workspace_bytes(uint32_t batch_size) {
  const uint64_t tiles = (uint64_t{batch_size} + kTile - 1) / kTile;
  return tiles <= 1 ? 0 : kWorkspaceHeader + tiles * sizeof(uint64_t);
}

cudaError_t launch_fast(const DevicePlanArgs& args, void* workspace, cudaStream_t stream) {
  const uint32_t batch = args.batch_size;
  const uint64_t m = args.max_chunks;
  const uint64_t tiles = batch == 0 ? 1 : (uint64_t{batch} + kTile - 1) / kTile;
  const uint64_t cols = batch < kTile ? uint64_t{batch} + 1 : kTile;
  // Split chunk rows over blocks only while the grid fits in one wave: past that, whole tiles
  // keep every multiprocessor busy and splitting would only repeat the tile scans.
  uint64_t splits = resident_fill_blocks() / tiles;
  const uint64_t by_work = m * cols / kMinCellsPerBlock;
  if (splits > by_work) splits = by_work;
  if (splits < 1) splits = 1;
  if (splits > m) splits = m;
  const uint64_t rows_per_split = (m + splits - 1) / splits;
  splits = (m + rows_per_split - 1) / rows_per_split;
  const uint64_t blocks = tiles * splits;
  if (blocks > 0x7fffffffu) return cudaErrorInvalidConfiguration;

  auto* ws = static_cast<Workspace*>(workspace);
  if (batch < kThreads) {
    fast_small_kernel<<<static_cast<uint32_t>(splits), kThreads, 0, stream>>>(args, static_cast<uint32_t>(rows_per_split));
    return cudaGetLastError();
  }
  if (tiles == 1) {
    fast_fill_kernel<false><<<static_cast<uint32_t>(blocks), kThreads, 0, stream>>>(
        args, nullptr, static_cast<uint32_t>(splits), static_cast<uint32_t>(rows_per_split));
    return cudaGetLastError();
  }
  fast_reduce_kernel<<<static_cast<uint32_t>(tiles), kThreads, 0, stream>>>(args, ws, static_cast<uint32_t>(tiles));
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  fast_fill_kernel<true><<<static_cast<uint32_t>(blocks), kThreads, 0, stream>>>(
      args, ws, static_cast<uint32_t>(splits), static_cast<uint32_t>(rows_per_split));
  return cudaGetLastError();
}

}  // namespace mlaplan::cuda_detail
