// The fast planning kernel: O(B + M*B) work with coalesced writes, for any batch size and chunk
// count. The plan has a closed form (semantics.md, "Properties"): with S[b] the exclusive prefix
// sum of the padded lengths L[b] and S[B] = E,
//   buffer_row_offsets[c][b] = clamp(S[b] - c*N, 0, N),  cache_offsets[c][b] = clamp(c*N - S[b], 0, L[b]),
// so once a block knows S for its columns, every table cell is independent and the kernel is a
// scan followed by a bandwidth-bound fill.
//
// Three shapes, each a single launch:
// - B <= 1024: one sequence per thread, one block-wide scan (cub::BlockScan), no workspace. This is
//   the latency-bound case, so it has the fewest instructions and barriers before the first store.
// - one tile of 2048 sequences: the same tile kernel as below, with no prefix to look up.
// - more tiles: one pass with a decoupled look-back, as CUB's DeviceScan does it. Each tile's first
//   block publishes the tile's aggregate and then its inclusive prefix, each in one 64-bit word with
//   its flags (a reader that sees the flag sees the value: no fence, no second load); each block's
//   first warp reads the words of up to 32 earlier tiles at a time, nearest first, and stops at the
//   nearest inclusive prefix. Each tile's loads are all issued before its arithmetic, so they take
//   one memory round trip. Tiles follow blockIdx, and blocks start in that order, so what a block waits
//   for has started. The last block to finish puts the words back to zero, so the workspace is
//   zeroed once and safe to replay from a CUDA graph.
//
// Chunks are parallel too: the grid is tiles x splits, each split owning a run of chunk rows, so a
// tiny batch with many chunks (B = 1, M = 4096) still spreads over many threads.
//
// The fill is where large batches spend their time, so it is lean: each thread owns two runs of 4
// consecutive columns and stores each row's cells as one 16-byte vector at a 16-byte-aligned
// address, row by row, both runs and both tables in each row (the order that writes the tables at
// memset speed). A table's rows (pitch B + 1 or B) start at any phase, so in a row that starts p
// elements past an alignment boundary a thread's vectors cover its columns shifted back by p, and a
// block's range of the row starts and ends on the boundary: 16 bytes, or 256 bytes for large tables
// (no two blocks then share a 256-byte block of memory, which DRAM writes at memset speed only when
// whole). The cells' S and L come from shared memory, which also holds the columns before the tile
// that its first vectors reach. Only the vectors at the ends of a row are stored cell by cell. Each
// cell is 3 instructions on 32-bit values (an ok plan has S < 2^32; a refused plan's cells are
// don't-care). docs/performance.md logs the measurements behind each of these choices.
//
// The pieces: fast_policy.hpp (the tuned constants, and fast_grid, the grid they give),
// fast_tile_state.cuh (the published words and the look-back), fast_fill.cuh (the stores); here the
// tile loads and scan, the kernels and their launch.
#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "fast_fill.cuh"
#include "fast_policy.hpp"
#include "fast_tile_state.cuh"
#include "kernels.hpp"
#include "plan_math.cuh"

namespace mlaplan::cuda_detail {

namespace {

using namespace fast;  // the tile state and the fill

__host__ __device__ inline uint32_t tile_columns(uint32_t batch, uint64_t tile) {
  const uint64_t b0 = tile * kTile;
  const uint64_t rest = batch - b0;
  return static_cast<uint32_t>(rest < kTile ? rest : kTile);
}


// Programmatic dependent launch (Hopper): the kernels are launched so that they may start while the
// stream's previous kernel finishes, and wait here, before reading anything, until it has
// completed and its writes are visible; then they let the stream's next kernel start early in
// turn (it waits the same way, if it was launched to). Back to back, this hides a launch's
// dispatch behind the previous one's tail. Without the launch attribute both are no-ops.
__device__ __forceinline__ void wait_for_previous_kernel() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;");
}

// Batches of at most kBlock sequences, the latency-bound case: one sequence per thread and one
// block-wide scan, without the tile path's runs, halo and staging through shared memory.
template <int kBlock>
__global__ void __launch_bounds__(kBlock) fast_small_kernel(DevicePlanArgs a, uint32_t rows_per_split) {
  using BlockScan = cub::BlockScan<uint64_t, kBlock, cub::BLOCK_SCAN_WARP_SCANS>;
  __shared__ typename BlockScan::TempStorage scan;
  __shared__ uint32_t s_start[kBlock];
  __shared__ uint32_t s_len[kBlock];
  __shared__ uint64_t s_total;
  __shared__ bool s_ok;

  wait_for_previous_kernel();
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
  if (batch > 0) write_narrow<kBlock>(a, s_start, s_len, batch, c0, c1);
  write_sentinel<kBlock>(a, s_total, s_ok, c0, c1);
}

enum class Prefix {
  kNone,      // one tile holds the batch
  kLookBack,  // the earlier tiles' published sums, looked back at
};

// A run's inputs as loaded: columns b .. b+3's cache lengths and the 5 offsets around them (0 past
// the batch). Every load of a tile is issued before any length is computed, so the tile's inputs
// take one memory round trip: with each run's lengths computed as it was loaded, the second run's
// loads waited for the first's (the first run's arithmetic uses its loads at once). One 16-byte
// load of each input where the inputs are 16-byte aligned and the run is whole.
struct RunInputs {
  uint32_t cache[kRun], offset[kRun + 1];
};
__device__ __forceinline__ void fetch_run(const DevicePlanArgs& a, uint64_t b, uint64_t end, bool vectors, RunInputs& in) {
  if (vectors && b + kRun <= end) {
    const uint4 c = __ldg(reinterpret_cast<const uint4*>(a.cache_lengths + b));
    const uint4 o = __ldg(reinterpret_cast<const uint4*>(a.input_row_offsets + b));
    in.cache[0] = c.x, in.cache[1] = c.y, in.cache[2] = c.z, in.cache[3] = c.w;
    in.offset[0] = o.x, in.offset[1] = o.y, in.offset[2] = o.z, in.offset[3] = o.w;
    in.offset[kRun] = __ldg(a.input_row_offsets + b + kRun);
  } else {
#pragma unroll
    for (int k = 0; k <= kRun; ++k) {
      if (k < kRun) in.cache[k] = b + k < end ? __ldg(a.cache_lengths + b + k) : 0u;
      in.offset[k] = b + k <= end ? __ldg(a.input_row_offsets + b + k) : 0u;
    }
  }
}

// The run's padded lengths (0 from `end` on), in 32 bits, with their 64-bit sum; `bad` when the
// offsets decrease among them. A length that needs more than 32 bits makes E overflow, which the
// sum shows, so the cells that use the truncated ones are don't-care.
__device__ __forceinline__ uint64_t run_lengths(const RunInputs& in, uint64_t b, uint64_t end, uint32_t page_size,
                                                uint32_t (&len)[kRun], bool& bad) {
  uint64_t sum = 0;
  bad = false;
#pragma unroll
  for (int k = 0; k < kRun; ++k) {
    uint64_t l = 0;
    if (b + k < end) {
      l = pad_to_pages(uint64_t{in.cache[k]} + (in.offset[k + 1] - in.offset[k]), page_size);
      bad |= in.offset[k + 1] < in.offset[k];
    }
    len[k] = static_cast<uint32_t>(l);
    sum += l;
  }
  return sum;
}

// One column's inputs as loaded, and its padded length (the tile's neighbours and L[B-1], whose
// offsets the tile that holds them checks).
struct ColumnInputs {
  uint32_t cache = 0, lo = 0, hi = 0;
};
__device__ __forceinline__ ColumnInputs fetch_column(const DevicePlanArgs& a, uint64_t b) {
  return {__ldg(a.cache_lengths + b), __ldg(a.input_row_offsets + b), __ldg(a.input_row_offsets + b + 1)};
}
__device__ __forceinline__ uint64_t column_length(const ColumnInputs& in, uint32_t page_size) {
  return pad_to_pages(uint64_t{in.cache} + (in.hi - in.lo), page_size);
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

using TileScan = cub::BlockScan<RunSums, kThreads, cub::BLOCK_SCAN_WARP_SCANS>;
using TileTemp = TileScan::TempStorage;

// A tile's lengths, as one thread holds them, and the tile's scan.
struct ScannedTile {
  uint32_t len[kRuns][kRun];  // L of the thread's runs
  uint32_t before[2];         // the first warp: L of columns b0 - kAlign + lane and + 32 + lane, where they exist
  RunSums excl;               // the thread's runs' exclusive prefixes within their run strides
  uint64_t sum;               // the tile's padded total
  uint64_t last_len;          // thread 0 of the last tile: L[B-1], which the status needs
  uint64_t strides_first;     // the first run stride's total
  bool bad;                   // the offsets decrease somewhere in the tile (block-uniform)
  // S of the thread's run r, relative to the tile's first column.
  __device__ uint64_t start(int r) const { return r == 0 ? excl.first : strides_first + excl.second; }
};

// Loads a tile's lengths (the first warp also those of the kAlign columns before it, whose cells
// share the tile's first vectors, and in the last tile thread 0 L[B-1]) and scans them. Ends with a
// barrier.
template <int kAlign>
__device__ __forceinline__ void scan_tile(const DevicePlanArgs& a, uint64_t tile, bool last_tile, TileTemp& temp,
                                          ScannedTile& t) {
  const uint64_t b0 = tile * kTile;
  const uint32_t batch = a.batch_size;
  const bool vectors = ((reinterpret_cast<uintptr_t>(a.input_row_offsets) | reinterpret_cast<uintptr_t>(a.cache_lengths)) & 15) == 0;
  const bool last_thread = last_tile && threadIdx.x == 0;
  RunInputs in[kRuns];
  ColumnInputs before[2], last;
#pragma unroll
  for (int r = 0; r < kRuns; ++r) fetch_run(a, b0 + r * kRunStride + kRun * threadIdx.x, batch, vectors, in[r]);
#pragma unroll
  for (int h = 0; h < 2; ++h)
    if (h * 32 + threadIdx.x < kAlign && tile > 0) before[h] = fetch_column(a, b0 - kAlign + h * 32 + threadIdx.x);
  if (last_thread) last = fetch_column(a, batch - 1);

  bool bad[kRuns];
  RunSums sums{run_lengths(in[0], b0 + kRun * threadIdx.x, batch, a.page_size, t.len[0], bad[0]),
               run_lengths(in[1], b0 + kRunStride + kRun * threadIdx.x, batch, a.page_size, t.len[1], bad[1])};
#pragma unroll
  for (int h = 0; h < 2; ++h) t.before[h] = static_cast<uint32_t>(column_length(before[h], a.page_size));  // 0 where not loaded
  t.last_len = last_thread ? column_length(last, a.page_size) : 0;
  RunSums strides;
  TileScan(temp).ExclusiveScan(sums, t.excl, RunSums{0, 0}, AddRunSums{}, strides);
  t.bad = __syncthreads_or(bad[0] || bad[1]);
  t.sum = strides.first + strides.second;
  t.strides_first = strides.first;
}

// Fetches a tile's inputs into L2, kept there before other lines, for the block that will take
// that tile a wave later: past one wave a block starts while the others' stores fill the memory
// queues, and its first loads are what it waits for. (Replanning one batch, whose inputs stay in
// L2, does not show it; rotating over input sets, as `bench` does, does: docs/performance.md.)
__device__ __forceinline__ void prefetch_tile_inputs(const DevicePlanArgs& a, uint64_t tile) {
  constexpr uint32_t kLine = 128 / sizeof(uint32_t);  // elements per cache line
  const uint64_t b0 = tile * kTile;
  if (b0 >= a.batch_size) return;
  const uint64_t end = std::min<uint64_t>(b0 + kTile, a.batch_size);
  const uint64_t i = b0 + uint64_t{threadIdx.x % (kThreads / 2)} * kLine;
  const uint32_t* p = threadIdx.x < kThreads / 2 ? a.cache_lengths : a.input_row_offsets;
  if (i < end + (p == a.input_row_offsets ? 1 : 0))
    asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p + i));
}


// One block: a tile of columns and a run of chunk rows [c0, c1), tile-major in blockIdx.
template <Prefix kPrefix, int kAlign>
__global__ void __launch_bounds__(kThreads, FastPolicy::kFillBlocksPerSM)
    fast_fill_kernel(DevicePlanArgs a, void* workspace, uint32_t splits, uint32_t rows_per_split, uint32_t prefetch_tiles) {
  __shared__ TileTemp temp;
  // S and L of tile column i - kHalo at [i]: [kHalo - kAlign, kHalo) the columns before the tile,
  // [kHalo + n_cols] the sentinel (S = E, L = 0). 32 bits suffice when the plan is ok.
  __shared__ alignas(16) uint32_t s_start[kTile + 2 * kHalo];
  __shared__ alignas(16) uint32_t s_len[kTile + 2 * kHalo];
  __shared__ bool s_ok;

  wait_for_previous_kernel();
  const uint32_t batch = a.batch_size;
  const uint64_t tiles = (uint64_t{batch} + kTile - 1) / kTile;
  const uint64_t tile = blockIdx.x / splits;
  const uint32_t split = blockIdx.x % splits;
  const uint64_t b0 = tile * kTile;
  const uint32_t n_cols = tile_columns(batch, tile);
  const bool last_tile = b0 + n_cols == batch;
  const uint32_t c0 = split * rows_per_split;
  const uint32_t c1 = rows_per_split < a.max_chunks - c0 ? c0 + rows_per_split : a.max_chunks;
  auto* header = static_cast<Header*>(workspace);
  auto* words = reinterpret_cast<uint64_t*>(static_cast<char*>(workspace) + kWordsOffset);

  unsigned int done = 0;
  ScannedTile t;
  scan_tile<kAlign>(a, tile, last_tile, temp, t);
  if (prefetch_tiles > 0 && split == 0) prefetch_tile_inputs(a, tile + prefetch_tiles);
  uint64_t prefix = 0;
  bool bad_before = false;
  if (kPrefix == Prefix::kLookBack) {
    prefix = look_back(words, tile, t.sum, t.bad, split == 0, bad_before);
    if (threadIdx.x == 0) done = atomicAdd(&header->done, 1u);  // waited for at the end
  }
  // S and L of the thread's columns into shared memory; the first warp adds the kAlign columns
  // before the tile (S counting back from the tile's: suffix sums of L), thread 0 the sentinel of a
  // full last tile and the batch's verdict.
#pragma unroll
  for (int r = 0; r < kRuns; ++r) {
    uint32_t s = static_cast<uint32_t>(prefix + t.start(r)), st[kRun];
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      st[k] = s;
      s += t.len[r][k];
    }
    const uint32_t i = r * kRunStride + kRun * threadIdx.x + kHalo;
    *reinterpret_cast<uint4*>(&s_start[i]) = make_uint4(st[0], st[1], st[2], st[3]);
    *reinterpret_cast<uint4*>(&s_len[i]) = make_uint4(t.len[r][0], t.len[r][1], t.len[r][2], t.len[r][3]);
  }
  const uint64_t total = prefix + t.sum;
  if (threadIdx.x < 32) {
    constexpr int kHalves = kAlign > 32 ? 2 : 1;
    const unsigned lane = threadIdx.x;
    uint32_t after[2] = {t.before[0], t.before[1]};  // suffix sums: L from the column to the tile
#pragma unroll
    for (int h = 0; h < kHalves; ++h)
#pragma unroll
      for (unsigned o = 1; o < 32; o *= 2) {
        const uint32_t y = __shfl_down_sync(~0u, after[h], o);
        if (lane + o < 32) after[h] += y;
      }
    const uint32_t s0 = static_cast<uint32_t>(prefix);  // S[b0]
    const uint32_t later = kHalves == 2 ? __shfl_sync(~0u, after[1], 0) : 0u;  // L of the second half's columns
#pragma unroll
    for (int h = 0; h < kHalves; ++h) {
      const uint32_t q = h * 32 + lane;
      if (q < kAlign) {
        s_start[kHalo - kAlign + q] = s0 - after[h] - (h == 0 ? later : 0u);
        s_len[kHalo - kAlign + q] = t.before[h];
      }
    }
  }
  if (threadIdx.x == 0) {
    s_start[kTile + kHalo] = static_cast<uint32_t>(total);
    s_len[kTile + kHalo] = 0;
    s_ok = true;
    if (last_tile) {  // this block has seen every tile: its own and the others' sums
      const DevicePlanStatus st =
          batch_status(batch, total, total - t.last_len, t.bad || bad_before, a.buffer_token_size, a.max_chunks);
      if (split == 0) *a.status = st;
      s_ok = st.code == kPlanOk;
    }
  }
  __syncthreads();

  if (last_tile)
    for (uint32_t c = c0 + threadIdx.x; c < c1; c += kThreads)
      a.buffer_lengths[c] = chunk_length(c, batch, total, a.buffer_token_size, s_ok);

  // The block stores tile columns from its first (the first tile) or from the kAlign before it, up
  // to its last or, in the last tile, the table's last (the sentinel included).
  FillTable rows{a.buffer_row_offsets + b0, uint64_t{batch} + 1, reinterpret_cast<uintptr_t>(a.buffer_row_offsets) / 4,
                 tile == 0 ? 0 : -kAlign, last_tile ? static_cast<int32_t>(n_cols) : static_cast<int32_t>(kTile) - 1, -1};
  FillTable cache{a.cache_offsets + b0, batch, reinterpret_cast<uintptr_t>(a.cache_offsets) / 4, rows.lo,
                  last_tile ? static_cast<int32_t>(n_cols) - 1 : static_cast<int32_t>(kTile) - 1, -1};
  if (last_tile) rows.tail_hi = rows.hi, cache.tail_hi = cache.hi;
  store_rows<kAlign>(rows, cache, c0, c1, a.buffer_token_size, s_start, s_len);

  if (kPrefix == Prefix::kLookBack) reset_words(header, words, tiles, done);
}

// Blocks of `kernel` (`threads` threads each) the current device runs at once, cached per device
// in `cache` (a host query, no synchronisation, so still graph-capture safe).
template <typename Kernel>
uint64_t resident_blocks(Kernel kernel, int threads, std::atomic<uint32_t> (&cache)[64]) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return 1024;
  uint32_t blocks = cache[device].load(std::memory_order_relaxed);
  if (blocks == 0) {
    int sms = 0, per_sm = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) != cudaSuccess)
      return 1024;
    blocks = static_cast<uint32_t>(std::max(1, sms * per_sm));
    cache[device].store(blocks, std::memory_order_relaxed);
  }
  return blocks;
}

// Launches with programmatic stream serialization allowed (see wait_for_previous_kernel).
template <typename... Params, typename... Args>
cudaError_t launch(void (*kernel)(Params...), uint32_t grid, uint32_t block, cudaStream_t stream, Args... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, args...);
}
}  // namespace

size_t fast_workspace_bytes(uint32_t batch_size) {
  const uint64_t tiles = (uint64_t{batch_size} + kTile - 1) / kTile;
  return tiles <= 1 ? 0 : kWordsOffset + tiles * sizeof(uint64_t);
}

cudaError_t launch_fast(const DevicePlanArgs& args, void* workspace, cudaStream_t stream) {
  constexpr int kSmallThreads = FastPolicy::kSmallThreads;
  const uint32_t batch = args.batch_size;
  // One wave of the kernel that runs; the one-block kernel of 1024 threads fits once per
  // multiprocessor.
  static std::atomic<uint32_t> fill_resident[64], small_resident[64];
  uint64_t resident = resident_blocks(fast_fill_kernel<Prefix::kLookBack, kLargeAlign>, kThreads, fill_resident);
  if (batch <= kSmallThreads && batch >= kThreads)
    resident = std::min(resident, resident_blocks(fast_small_kernel<kSmallThreads>, kSmallThreads, small_resident));
  const FastGrid g = fast_grid(batch, args.max_chunks, resident);
  if (g.blocks > 0x7fffffffu) return cudaErrorInvalidConfiguration;
  const auto grid = static_cast<uint32_t>(g.blocks);
  const auto per_split = static_cast<uint32_t>(g.rows_per_split);
  const auto n_splits = static_cast<uint32_t>(g.splits);
  const auto prefetch = static_cast<uint32_t>(g.prefetch_tiles);

  if (batch < kThreads) return launch(fast_small_kernel<kThreads>, grid, kThreads, stream, args, per_split);
  if (g.small) return launch(fast_small_kernel<kSmallThreads>, grid, kSmallThreads, stream, args, per_split);
  if (g.tiles == 1)
    return launch(fast_fill_kernel<Prefix::kNone, 4>, grid, kThreads, stream, args, static_cast<void*>(nullptr), n_splits,
                  per_split, uint32_t{0});
  if (g.large)
    return launch(fast_fill_kernel<Prefix::kLookBack, kLargeAlign>, grid, kThreads, stream, args, workspace, n_splits,
                  per_split, prefetch);
  return launch(fast_fill_kernel<Prefix::kLookBack, 4>, grid, kThreads, stream, args, workspace, n_splits, per_split,
                prefetch);
}

}  // namespace mlaplan::cuda_detail
