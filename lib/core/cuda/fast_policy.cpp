// The fast kernel's grid from its launch policy (fast_policy.hpp): host code, no CUDA.
#include <algorithm>

#include "fast_policy.hpp"

namespace mlaplan::cuda_detail {

FastGrid fast_grid(uint32_t batch, uint64_t max_chunks, uint64_t resident) {
  using P = FastPolicy;
  const uint64_t m = max_chunks;
  FastGrid g{};
  g.small = batch <= P::kSmallThreads;
  g.tiles = g.small ? 1 : (uint64_t{batch} + kTile - 1) / kTile;
  const uint64_t cols = g.small ? uint64_t{batch} + 1 : std::min<uint64_t>(batch, kTile);
  // Split chunk rows over blocks only while the grid fits in one wave: past that, whole tiles keep
  // every multiprocessor busy and splitting would only repeat the tile scans. (A second wave of the
  // one-block kernel of 1024 threads, which fits once per multiprocessor, doubles its latency.)
  uint64_t splits = resident / g.tiles;
  const uint64_t by_work = m * cols / (g.small ? P::kMinCellsPerSmallBlock : P::kMinCellsPerBlock);
  if (splits > by_work) splits = by_work;
  if (splits < 1) splits = 1;
  if (splits > m) splits = m;
  if (g.tiles > 1 && g.tiles * splits > P::kMaxLookBackBlocks)
    splits = std::max<uint64_t>(
        {1, P::kMaxLookBackBlocks / g.tiles, std::min<uint64_t>(splits, m / P::kMinRowsPastLookBackCap)});
  g.rows_per_split = (m + splits - 1) / splits;
  g.splits = (m + g.rows_per_split - 1) / g.rows_per_split;
  g.blocks = g.tiles * g.splits;
  // Past one wave, each block has the inputs of the tile one wave later fetched into L2.
  g.prefetch_tiles = g.blocks > resident ? resident / g.splits : 0;
  g.large = m * batch >= P::kLargeCells;
  return g;
}

}  // namespace mlaplan::cuda_detail
