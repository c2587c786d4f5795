// The fast planning kernel: O(B + M*B) work with coalesced writes, for any batch size and chunk
// count. The plan has a closed form (semantics.md, "Properties"): with S[b] the exclusive prefix
// sum of the padded lengths L[b] and S[B] = E,
//   buffer_row_offsets[c][b] = clamp(S[b] - c*N, 0, N),  cache_offsets[c][b] = clamp(c*N - S[b], 0, L[b]),
// so once a block knows S for its columns, every table cell is independent and the kernel is a
// scan followed by a bandwidth-bound fill.
//
// Three shapes, each a single launch but the last:
// - B <= 1024: one sequence per thread, one block-wide scan (cub::BlockScan), no workspace. This is
//   the latency-bound case, so it has the fewest instructions and barriers before the first store.
// - up to kMaxOnePassTiles tiles of 2048 sequences: one pass, as CUB's DeviceScan does it. Each
//   tile's first block publishes its tile sum and flags in one 64-bit word (so a reader that sees
//   the flag sees the sum: no fence, no second load); every block then sums the published words of
//   the earlier tiles, all loaded at once. Tiles follow blockIdx, and blocks start in that order,
//   so what a block waits for has started. The last block to finish puts the published words back
//   to zero, so the workspace is zeroed once and safe to replay from a CUDA graph.
// - more tiles: reduce-then-fill, two launches (summing every earlier tile would grow as tiles^2).
//
// Chunks are parallel too: the grid is tiles x splits, each split owning a run of chunk rows, so a
// tiny batch with many chunks (B = 1, M = 4096) still spreads over many threads.
//
// The fill is where large batches spend their time, so it is lean: each thread holds runs of 4
// consecutive columns (S and L in registers) and stores each row's cells as one 16-byte vector at
// a 16-byte-aligned address. A table's rows (pitch B + 1 or B) start at any phase modulo 4
// elements, so a thread's vector in a row of phase p covers its columns shifted by p: the thread
// also holds the 3 columns before its run (the tile's first thread, those of the previous tile),
// and the rows are stored in 4 classes (c mod 4), each with its phase fixed at compile time. Only
// the vectors at either end of a row, which two blocks share, are stored cell by cell. Each cell
// is 3 instructions on 32-bit values (an ok plan has S < 2^32; a refused plan's cells are don't-care).
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
constexpr int kItems = 8;                          // columns per thread in a tile
constexpr int kRun = 4;                            // the fill's runs: 4 consecutive columns, one 16-byte vector
constexpr int kRuns = kItems / kRun;               // runs per thread
constexpr uint32_t kRunStride = kThreads * kRun;   // columns between a thread's runs
constexpr uint32_t kTile = kThreads * kItems;      // columns (sequences) per tile
constexpr int kSmallThreads = 1024;                // batches up to this size take the one-block-scan path
// A block should write at least this many cells of each table, or splitting costs more in
// redundant scans than it buys. Small batches split finer: their blocks' scans are cheap and
// latency, not work, is what they are short of.
constexpr uint64_t kMinCellsPerBlock = 2048;
constexpr uint64_t kMinCellsPerSmallBlock = 512;
constexpr uint64_t kMaxOnePassTiles = 4096;        // B <= 8M sequences in one pass
constexpr uint64_t kBadBit = uint64_t{1} << 63;    // a reduced tile sum's flag: offsets decrease in this tile

// The reduce-then-fill workspace: a header, then one 64-bit value per tile (its sum, then its prefix).
struct Workspace {
  unsigned int done_blocks;  // reduce blocks finished in this launch; reset to 0 by the last
  int32_t ok;                // the status said kPlanOk
  uint64_t padded_tokens;    // E
  uint64_t tiles[1];         // flexible: `tiles` values
};
constexpr size_t kWorkspaceHeader = offsetof(Workspace, tiles);

// The one-pass workspace: a counter, then one published word per tile at a fixed place, so a
// workspace reused for batches of any size finds every word where the last launch cleared it. It
// comes first and the reduce-then-fill workspace after the largest one-pass area, so the two never
// overlap (a launch of either kind leaves the other's area as it found it).
struct OnePassHeader {
  unsigned int done;  // blocks done reading published words in this launch; the last resets them
  unsigned int pad[3];
};
// A published word: the tile's padded total (under 2^45: 2048 lengths under 2^34) and two flags.
constexpr uint64_t kSlotReady = uint64_t{1} << 63;  // published in this launch; 0 again after it
constexpr uint64_t kSlotBad = uint64_t{1} << 62;    // offsets decrease in this tile
constexpr uint64_t kSlotSum = kSlotBad - 1;
constexpr size_t kOnePassBytes = sizeof(OnePassHeader) + kMaxOnePassTiles * sizeof(uint64_t);
constexpr int kLookBackLoads = 4;
constexpr int kFillBlocksPerSM = 4;  // 64 registers: enough stores in flight to keep DRAM busy  // published words each thread loads at once

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
  kNone,     // one tile holds the batch
  kReduced,  // the reduce launch left each tile's prefix (and the batch's verdict) in the workspace
  kOnePass,  // published tile sums, summed here (see the file comment)
};

// Padded lengths of columns b .. b+3 (0 from `end` on), in 32 bits, with their 64-bit sum; `bad`
// when the offsets decrease among them. A length that needs more than 32 bits makes E overflow,
// which the sum shows, so the cells that use the truncated ones are don't-care. One 16-byte load
// of each input where the inputs are 16-byte aligned and the run is whole.
__device__ __forceinline__ uint64_t load_run(const DevicePlanArgs& a, uint64_t b, uint64_t end, bool vectors,
                                             uint32_t (&len)[kRun], bool& bad) {
  uint64_t l[kRun];
  if (vectors && b + kRun <= end) {
    const uint4 c = __ldg(reinterpret_cast<const uint4*>(a.cache_lengths + b));
    const uint4 o = __ldg(reinterpret_cast<const uint4*>(a.input_row_offsets + b));
    const uint32_t o4 = __ldg(a.input_row_offsets + b + kRun);
    l[0] = pad_to_pages(uint64_t{c.x} + (o.y - o.x), a.page_size);
    l[1] = pad_to_pages(uint64_t{c.y} + (o.z - o.y), a.page_size);
    l[2] = pad_to_pages(uint64_t{c.z} + (o.w - o.z), a.page_size);
    l[3] = pad_to_pages(uint64_t{c.w} + (o4 - o.w), a.page_size);
    bad = o.y < o.x || o.z < o.y || o.w < o.z || o4 < o.w;
  } else {
    bad = false;
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      l[k] = 0;
      if (b + k < end) {
        bool bad_k;
        l[k] = padded_length(a.input_row_offsets, a.cache_lengths, b + k, a.page_size, bad_k);
        bad |= bad_k;
      }
    }
  }
  uint64_t sum = 0;
#pragma unroll
  for (int k = 0; k < kRun; ++k) {
    len[k] = static_cast<uint32_t>(l[k]);
    sum += l[k];
  }
  return sum;
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

// What a thread stores for one run: S and L of the run's 4 columns (window index 3 + k is column
// k) and of the 3 before it, and the columns of the table that are this block's to store.
struct RunWindow {
  uint32_t s[kRun + 3];
  uint32_t l[kRun + 3];
  int32_t col;      // the run's first column in the tile
  int32_t lo, hi;   // this block stores tile columns [lo, hi] of the table
  int32_t tail_hi;  // thread 0 of the last tile: also the cells past every vector, up to here
};

// Stores rows c, c + 4, ... below c_end of one table, every one of those rows at phase kShift
// (its first element kShift elements past a 16-byte boundary): the thread's vector covers tile
// columns w.col - kShift .. w.col - kShift + 3, one aligned 16-byte store a row. Vectors with
// cells outside [lo, hi] are store_edges' (the ends of a row, shared with another block).
template <bool kCache, int kShift>
__device__ __forceinline__ void store_rows(uint32_t* __restrict__ table, uint64_t pitch, uint64_t b0, uint32_t c,
                                           uint32_t c_end, uint32_t n, const RunWindow& w) {
  const int32_t first = w.col - kShift;
  if (first < w.lo || first + kRun - 1 > w.hi) return;
  uint4* p = reinterpret_cast<uint4*>(table + (static_cast<int64_t>(c * pitch + b0) + first));
  const uint64_t step = pitch;  // 4 rows of uint32 = pitch vectors
  uint64_t cn = uint64_t{c} * n;
  for (; c < c_end; c += 4, p += step, cn += 4 * uint64_t{n}) {
    const uint32_t cn32 = saturate32(cn);
    uint32_t v[kRun];
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      const int i = 3 - kShift + k;
      v[k] = kCache ? cache_offset_cell(w.s[i], w.l[i], cn32) : row_offset_cell(w.s[i], cn32, n);
    }
    *p = make_uint4(v[0], v[1], v[2], v[3]);
  }
}

// The cells of rows [c0, c1) that no whole vector holds, cell by cell from the tile's S and L in
// shared memory: a thread's vector that reaches outside [lo, hi] (the first tile's first, the last
// tile's last), and in thread 0 of the last tile the cells past every thread's vectors (at most 4).
template <bool kCache>
__device__ __noinline__ void store_edges(uint32_t* __restrict__ table, uint64_t pitch, uint64_t b0, uint32_t c0,
                                         uint32_t c1, uint32_t n, int32_t col0, int32_t lo, int32_t hi, int32_t tail_hi,
                                         const uint32_t* s_start, const uint32_t* s_len) {
  const uint64_t phase0 = reinterpret_cast<uintptr_t>(table) / sizeof(uint32_t);
  for (uint32_t c = c0; c < c1; ++c) {
    const int32_t shift = static_cast<int32_t>((phase0 + uint64_t{c} * pitch) & 3);
    const int32_t first = col0 - shift;
    const uint32_t cn32 = saturate32(uint64_t{c} * n);
    uint32_t* row = table + (c * pitch + b0);
    auto store = [&](int32_t col) {
      const uint32_t s = s_start[col + kRun], l = s_len[col + kRun];
      row[col] = kCache ? cache_offset_cell(s, l, cn32) : row_offset_cell(s, cn32, n);
    };
    if (first < lo || first + kRun - 1 > hi)
      for (int32_t col = first < lo ? lo : first; col <= first + kRun - 1 && col <= hi; ++col) store(col);
    if (threadIdx.x == 0)
      for (int32_t col = static_cast<int32_t>(kTile) - shift; col <= tail_hi; ++col) store(col);
  }
}

// Rows [c0, c1) of one table: the rows fall in 4 phase classes by c mod 4, each stored with its
// phase fixed at compile time, then the cells at the rows' ends.
template <bool kCache>
__device__ __forceinline__ void store_table(uint32_t* __restrict__ table, uint64_t pitch, uint64_t b0, uint32_t c0,
                                            uint32_t c1, uint32_t n, const RunWindow& w, const uint32_t* s_start,
                                            const uint32_t* s_len) {
  const uint64_t phase0 = reinterpret_cast<uintptr_t>(table) / sizeof(uint32_t);
#pragma unroll 1
  for (uint32_t c = c0; c < c1 && c - c0 < 4; ++c) {
    switch ((phase0 + uint64_t{c} * pitch) & 3) {
      case 0: store_rows<kCache, 0>(table, pitch, b0, c, c1, n, w); break;
      case 1: store_rows<kCache, 1>(table, pitch, b0, c, c1, n, w); break;
      case 2: store_rows<kCache, 2>(table, pitch, b0, c, c1, n, w); break;
      default: store_rows<kCache, 3>(table, pitch, b0, c, c1, n, w); break;
    }
  }
  // Only threads near either end of the tile can hold a partial vector (or the tail).
  const bool edge = w.col - kRun < w.lo || w.col + kRun - 1 > w.hi || (threadIdx.x == 0 && w.tail_hi >= 0);
  if (edge) store_edges<kCache>(table, pitch, b0, c0, c1, n, w.col, w.lo, w.hi, w.tail_hi, s_start, s_len);
}

// Both runs' sums of a thread, scanned together: the tile's exclusive prefix within each run
// stride, and (as the aggregate) each stride's total.
struct RunSums {
  uint64_t first, second;
};
struct AddRunSums {
  __device__ RunSums operator()(const RunSums& x, const RunSums& y) const { return {x.first + y.first, x.second + y.second}; }
};
static_assert(kRuns == 2, "RunSums holds two runs");

// One block: a tile of columns and a run of chunk rows [c0, c1), tile-major in blockIdx.
template <Prefix kPrefix>
__global__ void __launch_bounds__(kThreads, kFillBlocksPerSM)
    fast_fill_kernel(DevicePlanArgs a, void* workspace, uint32_t splits, uint32_t rows_per_split) {
  using BlockScan = cub::BlockScan<RunSums, kThreads>;
  using BlockReduce = cub::BlockReduce<uint64_t, kThreads>;
  __shared__ union {
    typename BlockScan::TempStorage scan;
    typename BlockReduce::TempStorage reduce;
  } temp;
  // S and L of tile column i - 4 at [i]: [1, 4) the 3 columns before the tile, [4 + n_cols] the
  // sentinel (S = E, L = 0). 32 bits suffice when the plan is ok.
  __shared__ alignas(16) uint32_t s_start[kTile + 2 * kRun];
  __shared__ alignas(16) uint32_t s_len[kTile + 2 * kRun];
  __shared__ uint64_t s_prefix;
  __shared__ bool s_ok;
  __shared__ bool s_last_block;

  const uint32_t batch = a.batch_size;
  const uint64_t tiles = (uint64_t{batch} + kTile - 1) / kTile;
  const uint64_t tile = blockIdx.x / splits;
  const uint32_t split = blockIdx.x % splits;
  const uint64_t b0 = tile * kTile;
  const uint32_t n_cols = tile_columns(batch, tile);
  const bool last_tile = b0 + n_cols == batch;
  const uint32_t c0 = split * rows_per_split;
  const uint32_t c1 = rows_per_split < a.max_chunks - c0 ? c0 + rows_per_split : a.max_chunks;
  const Workspace* reduced = kPrefix == Prefix::kReduced
                                 ? reinterpret_cast<const Workspace*>(static_cast<const char*>(workspace) + kOnePassBytes)
                                 : nullptr;
  auto* header = kPrefix == Prefix::kOnePass ? static_cast<OnePassHeader*>(workspace) : nullptr;
  auto* published = reinterpret_cast<uint64_t*>(header + 1);

  // Issued first, so their latency overlaps the tile's loads: the reduced prefix and verdict, and
  // (the last tile) L[B-1], which the status needs.
  uint64_t prefix = kPrefix == Prefix::kReduced ? reduced->tiles[tile] : 0;
  const uint64_t reduced_total = kPrefix == Prefix::kReduced && last_tile ? reduced->padded_tokens : 0;
  const bool reduced_ok = kPrefix == Prefix::kReduced && last_tile ? reduced->ok != 0 : false;
  uint64_t last_len = 0;
  if (kPrefix != Prefix::kReduced && last_tile && threadIdx.x == 0) {
    bool ignored;
    last_len = padded_length(a.input_row_offsets, a.cache_lengths, batch - 1, a.page_size, ignored);
  }

  // The tile's lengths, and thread 0 those of the run before the tile (the previous tile's last
  // columns, whose cells share this tile's first vectors).
  const bool vectors = ((reinterpret_cast<uintptr_t>(a.input_row_offsets) | reinterpret_cast<uintptr_t>(a.cache_lengths)) & 15) == 0;
  uint32_t len[kRuns][kRun];
  bool bad0, bad1;
  RunSums sums{load_run(a, b0 + kRun * threadIdx.x, batch, vectors, len[0], bad0),
               load_run(a, b0 + kRunStride + kRun * threadIdx.x, batch, vectors, len[1], bad1)};
  uint32_t before[kRun] = {0, 0, 0, 0};
  if (threadIdx.x == 0 && tile > 0) {
    bool ignored;  // that tile's blocks report it
    load_run(a, b0 - kRun, batch, vectors, before, ignored);
  }

  RunSums excl, strides;
  BlockScan(temp.scan).ExclusiveScan(sums, excl, RunSums{0, 0}, AddRunSums{}, strides);
  const bool bad = __syncthreads_or(bad0 || bad1);  // also the barrier before temp is reused
  const uint64_t tile_sum = strides.first + strides.second;

  bool bad_before = false;
  if (kPrefix == Prefix::kOnePass) {
    if (threadIdx.x == 0 && split == 0)
      *static_cast<volatile uint64_t*>(&published[tile]) = kSlotReady | (bad ? kSlotBad : 0) | tile_sum;
    // Every earlier tile's word: kLookBackLoads loads in flight per thread, then each waited for
    // (its tile's first block started before this one and waits only on tiles before its own).
    uint64_t acc = 0;
    for (uint64_t j0 = 0; j0 < tile; j0 += kThreads * kLookBackLoads) {
      uint64_t v[kLookBackLoads];
#pragma unroll
      for (int i = 0; i < kLookBackLoads; ++i) {
        const uint64_t j = j0 + i * kThreads + threadIdx.x;
        v[i] = j < tile ? *static_cast<volatile uint64_t*>(&published[j]) : uint64_t{kSlotReady};
      }
#pragma unroll
      for (int i = 0; i < kLookBackLoads; ++i) {
        const uint64_t j = j0 + i * kThreads + threadIdx.x;
        while ((v[i] & kSlotReady) == 0) v[i] = *static_cast<volatile uint64_t*>(&published[j]);
        acc += v[i] & kSlotSum;
        bad_before |= (v[i] & kSlotBad) != 0;
      }
    }
    acc = BlockReduce(temp.reduce).Sum(acc);
    if (threadIdx.x == 0) s_prefix = acc;
    bad_before = __syncthreads_or(bad_before);
    prefix = s_prefix;
  }

  // S and L of the thread's columns into shared memory; thread 0 adds the 3 columns before the
  // tile, the sentinel of a full last tile, and the batch's verdict.
#pragma unroll
  for (int r = 0; r < kRuns; ++r) {
    uint32_t s = static_cast<uint32_t>(prefix + (r == 0 ? excl.first : strides.first + excl.second));
    uint32_t st[kRun];
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      st[k] = s;
      s += len[r][k];
    }
    const uint32_t i = r * kRunStride + kRun * threadIdx.x + kRun;
    *reinterpret_cast<uint4*>(&s_start[i]) = make_uint4(st[0], st[1], st[2], st[3]);
    *reinterpret_cast<uint4*>(&s_len[i]) = make_uint4(len[r][0], len[r][1], len[r][2], len[r][3]);
  }
  const uint64_t total = prefix + tile_sum;
  if (threadIdx.x == 0) {
    uint32_t s = static_cast<uint32_t>(prefix);  // S[b0]: the columns before the tile count back from it
    for (int k = kRun - 1; k >= 1; --k) {
      s -= before[k];
      s_start[k] = s;
      s_len[k] = before[k];
    }
    s_start[kTile + kRun] = static_cast<uint32_t>(total);
    s_len[kTile + kRun] = 0;
    s_ok = true;
    if (last_tile) {
      if (kPrefix == Prefix::kReduced) {  // the reduce launch judged the whole batch
        s_ok = reduced_ok;
      } else {  // this block has seen every tile: its own and (one pass) the others' sums
        const DevicePlanStatus st =
            batch_status(batch, total, total - last_len, bad || bad_before, a.buffer_token_size, a.max_chunks);
        if (split == 0) *a.status = st;
        s_ok = st.code == kPlanOk;
      }
    }
  }
  __syncthreads();
  unsigned int done = 0;
  if (kPrefix == Prefix::kOnePass && threadIdx.x == 0) done = atomicAdd(&header->done, 1u);  // waited for at the end

  if (last_tile) {
    const uint64_t padded = kPrefix == Prefix::kReduced ? reduced_total : total;
    for (uint32_t c = c0 + threadIdx.x; c < c1; c += kThreads)
      a.buffer_lengths[c] = chunk_length(c, batch, padded, a.buffer_token_size, s_ok);
  }

  // Each run's cells: the block stores tile columns from its first (the first tile) or from the 3
  // before it, up to its last or, in the last tile, the table's last (the sentinel included).
#pragma unroll 1
  for (int r = 0; r < kRuns; ++r) {
    RunWindow w;
    w.col = static_cast<int32_t>(r * kRunStride + kRun * threadIdx.x);
    const uint4 s0 = *reinterpret_cast<const uint4*>(&s_start[w.col]);
    const uint4 s1 = *reinterpret_cast<const uint4*>(&s_start[w.col + kRun]);
    const uint4 l0 = *reinterpret_cast<const uint4*>(&s_len[w.col]);
    const uint4 l1 = *reinterpret_cast<const uint4*>(&s_len[w.col + kRun]);
    w.s[0] = s0.y, w.s[1] = s0.z, w.s[2] = s0.w, w.s[3] = s1.x, w.s[4] = s1.y, w.s[5] = s1.z, w.s[6] = s1.w;
    w.l[0] = l0.y, w.l[1] = l0.z, w.l[2] = l0.w, w.l[3] = l1.x, w.l[4] = l1.y, w.l[5] = l1.z, w.l[6] = l1.w;
    w.lo = tile == 0 ? 0 : -kRun;
    w.hi = last_tile ? static_cast<int32_t>(n_cols) : static_cast<int32_t>(kTile) - 1;
    w.tail_hi = last_tile ? w.hi : -1;
    store_table<false>(a.buffer_row_offsets, uint64_t{batch} + 1, b0, c0, c1, a.buffer_token_size, w, s_start, s_len);
    w.hi = last_tile ? static_cast<int32_t>(n_cols) - 1 : static_cast<int32_t>(kTile) - 1;
    w.tail_hi = last_tile ? w.hi : -1;
    store_table<true>(a.cache_offsets, batch, b0, c0, c1, a.buffer_token_size, w, s_start, s_len);
  }

  if (kPrefix == Prefix::kOnePass) {
    // The last block to be done reading puts the published words back to zero for the next launch.
    if (threadIdx.x == 0) s_last_block = done == gridDim.x - 1;
    __syncthreads();
    if (s_last_block) {
      for (uint64_t j = threadIdx.x; j < tiles; j += kThreads) published[j] = 0;
      if (threadIdx.x == 0) header->done = 0;
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
  if (tiles <= 1) return 0;
  if (tiles <= kMaxOnePassTiles) return sizeof(OnePassHeader) + tiles * sizeof(uint64_t);
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
