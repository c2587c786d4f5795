// The fast planning kernel: O(B + M*B) work with coalesced writes, for any batch size and chunk
// count. The plan has a closed form (semantics.md, "Properties"): with S[b] the exclusive prefix
// sum of the padded lengths L[b] and S[B] = E,
//   buffer_row_offsets[c][b] = clamp(S[b] - c*N, 0, N),  cache_offsets[c][b] = clamp(c*N - S[b], 0, L[b]),
// so once a block knows S for its columns, every table cell is independent and the kernel is a
// scan followed by a bandwidth-bound fill.
//
// Four shapes, each a single launch but the last:
// - B <= 1024: one sequence per thread, one block-wide scan (cub::BlockScan), no workspace. This is
//   the latency-bound case, so it has the fewest instructions and barriers before the first store.
// - up to kMaxRedundantTiles tiles of 2048 sequences (B <= 4096): each block sums every column
//   before its tile itself, loaded alongside its own, so no block waits for another and there is
//   no workspace; a latency-bound size too, where one trip to memory beats three.
// - up to kMaxOnePassTiles tiles: one pass. Each tile's block publishes its tile
//   sum, then sums the published sums of every earlier tile (blocks take tickets in the order they
//   start, so what they wait for is already running); the block holding the last tile judges the
//   whole batch. The last block to finish puts the workspace back to zero, so it is zeroed once and
//   safe to replay from a CUDA graph.
// - more tiles: reduce-then-fill, two launches (summing every earlier tile would grow as tiles^2).
//
// Chunks are parallel too: the grid is tiles x splits, each split owning a run of chunk rows, so a
// tiny batch with many chunks (B = 1, M = 4096) still spreads over many threads. Wide tiles store
// through shared memory as 16-byte vectors at 16-byte-aligned addresses: the tables' rows (pitch
// B + 1) are rarely aligned, and scalar stores across line boundaries made L2 the busiest unit.
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "kernels.hpp"
#include "plan_math.cuh"

namespace mlaplan::cuda_detail {

namespace {

constexpr int kThreads = 256;
constexpr int kItems = 8;
constexpr uint32_t kTile = kThreads * kItems;  // columns (sequences) per tile
constexpr int kSmallThreads = 1024;            // batches up to this size take the one-block-scan path
// A block should write at least this many cells of each table, or splitting costs more in
// redundant scans than it buys. Small batches split finer: their blocks' scans are cheap and
// latency, not work, is what they are short of.
constexpr uint64_t kMinCellsPerBlock = 2048;
constexpr uint64_t kMinCellsPerSmallBlock = 512;
constexpr uint64_t kMaxOnePassTiles = 1024;      // B <= 2M sequences in one pass
// Up to this many tiles each block sums the columns before its tile itself (O(tiles^2) reads from
// L2, all in flight with the tile's own) rather than waiting for other blocks' published sums.
// Measured on the H200 (docs/performance.md, round 2): at 2 tiles (B = 4096) 7.57 us against 8.66
// one-pass; at 8 tiles (16,384) 10.9 against 9.4, the redundant reads costing more than the wait.
constexpr uint64_t kMaxRedundantTiles = 2;
constexpr uint64_t kBadBit = uint64_t{1} << 63;  // a tile sum's flag: offsets decrease in this tile

// The reduce-then-fill workspace: a header, then one 64-bit value per tile (its sum, then its prefix).
struct Workspace {
  unsigned int done_blocks;  // reduce blocks finished in this launch; reset to 0 by the last
  int32_t ok;                // the status said kPlanOk
  uint64_t padded_tokens;    // E
  uint64_t tiles[1];         // flexible: `tiles` values
};
constexpr size_t kWorkspaceHeader = offsetof(Workspace, tiles);

// The one-pass workspace: two counters, then one slot per tile at a fixed place, so a workspace
// reused for batches of any size finds every flag where the last launch cleared it. It comes
// first and the reduce-then-fill workspace after the largest one-pass area, so the two never
// overlap (a launch of either kind leaves the other's area as it found it).
struct OnePassWorkspace {
  unsigned int ticket;  // tickets taken in this launch: the order in which blocks started
  unsigned int done;    // blocks finished in this launch
  uint64_t pad;
};
struct TileSlot {
  uint64_t sum;    // the tile's padded total, kBadBit set when its offsets decrease
  uint32_t ready;  // 1 once `sum` is published in this launch; 0 again after it
  uint32_t pad;
};
constexpr size_t kOnePassBytes = sizeof(OnePassWorkspace) + kMaxOnePassTiles * sizeof(TileSlot);

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
template <int kBlock>
__device__ __forceinline__ void write_narrow(const DevicePlanArgs& a, const uint32_t* s_start, const uint32_t* s_len,
                                             uint64_t b0, uint32_t n_cols, uint64_t c0, uint64_t c1) {
  const uint64_t n = a.buffer_token_size;
  const uint64_t pitch = uint64_t{a.batch_size} + 1;
  const uint32_t step_c = kBlock / n_cols;
  const uint32_t step_col = kBlock % n_cols;
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

// Stores one table row's segment out[base, base + n_cols), item k of this thread being column
// k * kThreads + threadIdx.x with value value_of(k): staged in shared memory shifted to the row's
// 16-byte alignment, then written as 16-byte vectors (the partial vectors at either end, which
// neighbouring tiles share, element by element). `out` must be 16-byte aligned. Ends with the
// stage still being read: the caller alternates two stages, so one barrier per row suffices.
template <typename ValueOf>
__device__ __forceinline__ void store_row_vectorized(uint32_t* __restrict__ out, uint64_t base, uint32_t n_cols,
                                                     uint32_t* __restrict__ stage, ValueOf value_of) {
  const uint32_t mis = static_cast<uint32_t>(base & 3);
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const uint32_t col = k * kThreads + threadIdx.x;
    if (col < n_cols) stage[col + mis] = value_of(k);
  }
  __syncthreads();
  uint32_t* row = out + (base - mis);
  const uint32_t end = n_cols + mis;  // stage[mis, end) holds the segment
  const uint32_t slots = (end + 3) / 4;
  for (uint32_t v = threadIdx.x; v < slots; v += kThreads) {
    const uint32_t lo = 4 * v;
    if (lo >= mis && lo + 4 <= end) {
      reinterpret_cast<uint4*>(row)[v] = reinterpret_cast<const uint4*>(stage)[v];
    } else {
      for (uint32_t i = lo < mis ? mis : lo; i < (lo + 4 < end ? lo + 4 : end); ++i) row[i] = stage[i];
    }
  }
}

// Batches of at most kBlock sequences, the latency-bound case: one sequence per thread and one
// block-wide scan, without the tile path's exchange and its extra barriers.
template <int kBlock>
__global__ void __launch_bounds__(kBlock) fast_small_kernel(DevicePlanArgs a, uint32_t rows_per_split) {
  using BlockScan = cub::BlockScan<uint64_t, kBlock, cub::BLOCK_SCAN_WARP_SCANS>;
  __shared__ typename BlockScan::TempStorage scan;
  __shared__ uint32_t s_start[kBlock];
  __shared__ uint32_t s_len[kBlock];
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
  if (batch > 0) write_narrow<kBlock>(a, s_start, s_len, 0, batch, c0, c1);
  write_sentinel<kBlock>(a, s_total, s_ok, c0, c1);
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

enum class Prefix {
  kNone,       // one tile holds the batch
  kRedundant,  // each block sums every earlier column itself: no workspace, no waiting (few tiles)
  kReduced,    // the reduce launch left each tile's prefix (and the batch's verdict) in the workspace
  kOnePass,    // published tile sums, summed here (see the file comment)
};

// One block: a tile of columns and a run of chunk rows [c0, c1). With kOnePass the block's
// (tile, split) comes from its ticket, else from blockIdx (tile-major).
template <Prefix kPrefix>
__global__ void __launch_bounds__(kThreads)
    fast_fill_kernel(DevicePlanArgs a, void* workspace, uint32_t splits, uint32_t rows_per_split) {
  using BlockExchange = cub::BlockExchange<uint64_t, kThreads, kItems>;
  using BlockScan = cub::BlockScan<uint64_t, kThreads>;
  using BlockReduce = cub::BlockReduce<uint64_t, kThreads>;
  __shared__ union {
    typename BlockExchange::TempStorage exchange;
    typename BlockScan::TempStorage scan;
    typename BlockReduce::TempStorage reduce;
    alignas(16) uint32_t stage[2][kTile + 4];  // the vectorized stores' staging rows, used last
  } temp;
  __shared__ uint32_t s_start[kTile];  // S[b] of the tile's columns (32 bits suffice when the plan is ok)
  __shared__ uint32_t s_len[kTile];    // L[b]
  __shared__ uint64_t s_total;
  __shared__ uint64_t s_last_len;
  __shared__ uint64_t s_prefix;
  __shared__ uint32_t s_ticket;
  __shared__ bool s_ok;
  __shared__ bool s_last_block;

  const uint32_t batch = a.batch_size;
  const uint64_t tiles = (uint64_t{batch} + kTile - 1) / kTile;
  uint32_t block = blockIdx.x;
  if (kPrefix == Prefix::kOnePass) {
    if (threadIdx.x == 0) s_ticket = atomicAdd(&static_cast<OnePassWorkspace*>(workspace)->ticket, 1u);
    __syncthreads();
    block = s_ticket;
  }
  const uint64_t tile = block / splits;
  const uint32_t split = block % splits;
  const uint64_t b0 = tile * kTile;
  const uint32_t n_cols = tile_columns(batch, tile);
  const bool last_tile = b0 + n_cols == batch;
  const uint64_t c0 = uint64_t{split} * rows_per_split;
  const uint64_t c1 = c0 + rows_per_split < a.max_chunks ? c0 + rows_per_split : a.max_chunks;
  const Workspace* reduced = kPrefix == Prefix::kReduced
                                 ? reinterpret_cast<const Workspace*>(static_cast<const char*>(workspace) + kOnePassBytes)
                                 : nullptr;
  // Issued first, so their latency overlaps the tile's loads.
  uint64_t prefix = kPrefix == Prefix::kReduced ? reduced->tiles[tile] : 0;
  const uint64_t reduced_total = kPrefix == Prefix::kReduced && last_tile ? reduced->padded_tokens : 0;
  const bool reduced_ok = kPrefix == Prefix::kReduced && last_tile ? reduced->ok != 0 : false;
  if (n_cols == 0 && threadIdx.x == 0) s_last_len = 0;  // an empty batch has no last column

  // kRedundant: the padded lengths of every column before the tile, summed by this block. Loaded
  // before the tile's own columns are used, so both streams of loads are in flight at once and the
  // block's path to its first store has a single trip to memory.
  uint64_t before = 0;
  bool bad_before = false;
  if (kPrefix == Prefix::kRedundant) {
#pragma unroll 4
    for (uint64_t j = threadIdx.x; j < b0; j += kThreads) {
      bool bad_j;
      before += padded_length(a.input_row_offsets, a.cache_lengths, j, a.page_size, bad_j);
      bad_before |= bad_j;
    }
  }

  uint64_t len[kItems];
  const bool bad = __syncthreads_or(load_striped(a, b0, n_cols, len, &s_last_len));

  if (kPrefix == Prefix::kRedundant) {
    const uint64_t acc = BlockReduce(temp.reduce).Sum(before);
    bad_before = __syncthreads_or(bad_before);
    if (threadIdx.x == 0) s_prefix = acc;
    __syncthreads();
    prefix = s_prefix;
  }
  if (kPrefix == Prefix::kOnePass) {
    TileSlot* slots = reinterpret_cast<TileSlot*>(static_cast<OnePassWorkspace*>(workspace) + 1);
    const uint64_t sum = BlockReduce(temp.reduce).Sum(len);
    if (threadIdx.x == 0 && split == 0) {
      slots[tile].sum = sum | (bad ? kBadBit : 0);
      __threadfence();  // the sum is visible before the flag that announces it
      atomicExch(&slots[tile].ready, 1u);
    }
    // Every earlier tile's sum, each waited for: its publisher holds an earlier ticket, so it has
    // started and waits only on tiles before its own.
    uint64_t acc = 0;
    for (uint64_t j = threadIdx.x; j < tile; j += kThreads) {
      while (*static_cast<volatile uint32_t*>(&slots[j].ready) == 0) __nanosleep(64);
      __threadfence();
      const uint64_t x = __ldcg(&slots[j].sum);
      acc += x & ~kBadBit;
      bad_before |= (x & kBadBit) != 0;
    }
    __syncthreads();  // temp.reduce is reused
    acc = BlockReduce(temp.reduce).Sum(acc);
    bad_before = __syncthreads_or(bad_before);
    if (threadIdx.x == 0) s_prefix = acc;
    __syncthreads();
    prefix = s_prefix;
  }

  // Scan the tile: exchange the striped lengths to blocked, block-wide exclusive sum.
#pragma unroll
  for (int k = 0; k < kItems; ++k) s_len[k * kThreads + threadIdx.x] = static_cast<uint32_t>(len[k]);
  BlockExchange(temp.exchange).StripedToBlocked(len, len);
  __syncthreads();
  uint64_t aggregate;
  BlockScan(temp.scan).ExclusiveSum(len, len, aggregate);
#pragma unroll
  for (int k = 0; k < kItems; ++k) s_start[threadIdx.x * kItems + k] = static_cast<uint32_t>(prefix + len[k]);
  if (last_tile && threadIdx.x == 0) {
    if (kPrefix == Prefix::kReduced) {  // the reduce launch judged the whole batch
      s_total = reduced_total;
      s_ok = reduced_ok;
    } else {  // this block has seen every tile: its own and (one pass, redundant) the others' sums
      const uint64_t total = prefix + aggregate;
      const DevicePlanStatus st =
          batch_status(batch, total, total - s_last_len, bad || bad_before, a.buffer_token_size, a.max_chunks);
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
    const uint64_t n = n32;
    uint32_t k_start[kItems], r[kItems], l[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const uint32_t col = k * kThreads + threadIdx.x;
      const uint32_t s = col < n_cols ? s_start[col] : 0;
      k_start[k] = s / n32;
      r[k] = s - k_start[k] * n32;
      l[k] = col < n_cols ? s_len[col] : 0;
    }
    const bool aligned = ((reinterpret_cast<uintptr_t>(row_offsets) | reinterpret_cast<uintptr_t>(cache_offsets)) & 15) == 0;
    for (uint64_t c = c0; c < c1; ++c) {
      auto row_offset = [&](int k) { return c < k_start[k] ? n32 : c == k_start[k] ? r[k] : 0u; };
      // Rows consumed before chunk c: (c - k) * N - r, capped at L.
      auto cache_offset = [&](int k) {
        return c <= k_start[k] ? 0u : static_cast<uint32_t>(min64((c - k_start[k]) * n - r[k], l[k]));
      };
      if (aligned) {
        store_row_vectorized(row_offsets, c * pitch + b0, n_cols, temp.stage[0], row_offset);
        store_row_vectorized(cache_offsets, c * batch + b0, n_cols, temp.stage[1], cache_offset);
      } else {
        uint32_t* ro = row_offsets + c * pitch + b0;
        uint32_t* co = cache_offsets + c * batch + b0;
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
          const uint32_t col = k * kThreads + threadIdx.x;
          if (col < n_cols) {
            ro[col] = row_offset(k);
            co[col] = cache_offset(k);
          }
        }
      }
    }
  } else if (n_cols > 0) {
    write_narrow<kThreads>(a, s_start, s_len, b0, n_cols, c0, c1);
  }

  if (last_tile) write_sentinel<kThreads>(a, s_total, s_ok, c0, c1);

  if (kPrefix == Prefix::kOnePass) {
    // The last block to finish puts the workspace back to zero for the next launch: every other
    // block has taken its ticket and read the sums it needed.
    auto* ws = static_cast<OnePassWorkspace*>(workspace);
    __syncthreads();
    if (threadIdx.x == 0) s_last_block = atomicAdd(&ws->done, 1u) == tiles * splits - 1;
    __syncthreads();
    if (s_last_block) {
      TileSlot* slots = reinterpret_cast<TileSlot*>(ws + 1);
      for (uint64_t j = threadIdx.x; j < tiles; j += kThreads) slots[j].ready = 0;
      if (threadIdx.x == 0) {
        ws->ticket = 0;
        ws->done = 0;
      }
    }
  }
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
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fast_fill_kernel<Prefix::kOnePass>, kThreads, 0) !=
            cudaSuccess)
      return 1024;
    blocks = static_cast<uint32_t>(std::max(1, sms * per_sm));
    cache[device].store(blocks, std::memory_order_relaxed);
  }
  return blocks;
}

size_t fast_workspace_bytes(uint32_t batch_size) {
  const uint64_t tiles = (uint64_t{batch_size} + kTile - 1) / kTile;
  if (tiles <= 1 || (batch_size > kSmallThreads && tiles <= kMaxRedundantTiles)) return 0;
  if (tiles <= kMaxOnePassTiles) return sizeof(OnePassWorkspace) + tiles * sizeof(TileSlot);
  return kOnePassBytes + kWorkspaceHeader + tiles * sizeof(uint64_t);
}

cudaError_t launch_fast(const DevicePlanArgs& args, void* workspace, cudaStream_t stream) {
  const uint32_t batch = args.batch_size;
  const uint64_t m = args.max_chunks;
  const bool small = batch <= kSmallThreads;
  const uint64_t tiles = small ? 1 : (uint64_t{batch} + kTile - 1) / kTile;
  const uint64_t cols = small ? uint64_t{batch} + 1 : std::min<uint64_t>(batch, kTile);
  // Split chunk rows over blocks only while the grid fits in one wave: past that, whole tiles
  // keep every multiprocessor busy and splitting would only repeat the tile scans.
  uint64_t splits = resident_fill_blocks() / tiles;
  const uint64_t by_work = m * cols / (small ? kMinCellsPerSmallBlock : kMinCellsPerBlock);
  if (splits > by_work) splits = by_work;
  if (splits < 1) splits = 1;
  if (splits > m) splits = m;
  const uint64_t rows_per_split = (m + splits - 1) / splits;
  splits = (m + rows_per_split - 1) / rows_per_split;
  const uint64_t blocks = tiles * splits;
  if (blocks > 0x7fffffffu) return cudaErrorInvalidConfiguration;
  const auto grid = static_cast<uint32_t>(blocks);
  const auto per_split = static_cast<uint32_t>(rows_per_split);

  if (batch < kThreads) {
    fast_small_kernel<kThreads><<<grid, kThreads, 0, stream>>>(args, per_split);
  } else if (small) {
    fast_small_kernel<kSmallThreads><<<grid, kSmallThreads, 0, stream>>>(args, per_split);
  } else if (tiles == 1) {
    fast_fill_kernel<Prefix::kNone><<<grid, kThreads, 0, stream>>>(args, nullptr, static_cast<uint32_t>(splits), per_split);
  } else if (tiles <= kMaxRedundantTiles) {
    fast_fill_kernel<Prefix::kRedundant><<<grid, kThreads, 0, stream>>>(args, nullptr, static_cast<uint32_t>(splits),
                                                                          per_split);
  } else if (tiles <= kMaxOnePassTiles) {
    fast_fill_kernel<Prefix::kOnePass><<<grid, kThreads, 0, stream>>>(args, workspace, static_cast<uint32_t>(splits),
                                                                        per_split);
  } else {
    auto* ws = reinterpret_cast<Workspace*>(static_cast<char*>(workspace) + kOnePassBytes);
    fast_reduce_kernel<<<static_cast<uint32_t>(tiles), kThreads, 0, stream>>>(args, ws, static_cast<uint32_t>(tiles));
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    fast_fill_kernel<Prefix::kReduced><<<grid, kThreads, 0, stream>>>(args, workspace, static_cast<uint32_t>(splits),
                                                                       per_split);
  }
  return cudaGetLastError();
}

}  // namespace mlaplan::cuda_detail
