// The fast kernel's launch policy, as CUB's device/dispatch policies: its tuned constants in one
// struct, and fast_grid, which turns them into a launch's grid. Each constant says briefly why it is
// what it is; the H200 measurements behind them are in docs/performance.md. Host and device code
// both read it (fast_kernel.cu, fast_tile_state.cuh, fast_fill.cuh; fast_policy.cpp).
#pragma once

#include <cstdint>

namespace mlaplan::cuda_detail {

struct FastPolicy {
  // A tile: kThreads threads of kItems columns each, held as runs of kRun consecutive columns, one
  // 16-byte vector of a table row per run.
  static constexpr int kThreads = 256;
  static constexpr int kItems = 8;
  static constexpr int kRun = 4;
  // Batches up to this size take the one-block-scan kernel: one sequence per thread, the fewest
  // instructions and barriers before the first store, for the latency-bound case.
  static constexpr int kSmallThreads = 1024;
  // In every row, each block writes a range of memory whose ends are aligned to 4 cells (16 bytes,
  // each vector whole) or, for tables of kLargeCells cells and more (B = 256K at M = 16), to
  // kLargeAlign cells (256 bytes), so that no two blocks share a 256-byte block, which DRAM writes
  // at memset speed only when whole; large tables are also stored streaming, as they do not fit in
  // L2. Smaller tables mostly stay in L2, where neither paid.
  static constexpr int kLargeAlign = 64;
  static constexpr uint64_t kLargeCells = uint64_t{1} << 22;
  // A block should write at least this many cells of each table, or splitting chunk rows over
  // blocks costs more in redundant scans than it buys. Small batches split finer: their blocks'
  // scans are cheap, and latency, not work, is what they are short of.
  static constexpr uint64_t kMinCellsPerBlock = 2048;
  static constexpr uint64_t kMinCellsPerSmallBlock = 512;
  // Every block of a tile looks back on its own, so past a few tiles splitting multiplies the
  // readers of the published words: at most this many blocks look back...
  static constexpr uint64_t kMaxLookBackBlocks = 128;
  // ...unless each block still stores this many chunk rows, which is worth its look-back.
  static constexpr uint64_t kMinRowsPastLookBackCap = 16;
  // Fill blocks per multiprocessor: 64 registers a thread, enough stores in flight to keep DRAM busy.
  static constexpr int kFillBlocksPerSM = 4;
};

// The tile's shape, as the device code names it.
constexpr int kThreads = FastPolicy::kThreads;
constexpr int kItems = FastPolicy::kItems;             // columns per thread in a tile
constexpr int kRun = FastPolicy::kRun;                 // the fill's runs: 4 consecutive columns, one 16-byte vector
constexpr int kRuns = kItems / kRun;                   // runs per thread
constexpr uint32_t kRunStride = kThreads * kRun;       // columns between a thread's runs
constexpr uint32_t kTile = kThreads * kItems;          // columns (sequences) per tile
constexpr int kLargeAlign = FastPolicy::kLargeAlign;
// Shared-memory slots before the tile's column 0: a tile's first vectors hold cells of up to
// kAlign - 1 columns before it.
constexpr int kHalo = kLargeAlign;

// One launch of the fast kernel: which kernel, and its grid of tiles x splits (each split a run of
// rows_per_split chunk rows).
struct FastGrid {
  bool small;               // the one-block-scan kernel (tiles = 1)
  bool large;               // kLargeAlign-aligned ranges and streaming stores
  uint64_t tiles, splits, rows_per_split, blocks;
  uint64_t prefetch_tiles;  // past one wave: tiles ahead whose inputs each block fetches into L2
};

// The grid for B = batch sequences and M = max_chunks (>= 1) chunks, when `resident` blocks of the
// kernel that runs fit on the device at once. Host-only arithmetic, no CUDA call.
FastGrid fast_grid(uint32_t batch, uint64_t max_chunks, uint64_t resident);

}  // namespace mlaplan::cuda_detail
