// The fast kernel's tile state, apart from its scan as CUB's ScanTileState is: the workspace of
// published words through which the tiles of one launch pass on their sums, the decoupled look-back
// that reads them, and the reset that leaves the workspace zeroed for the next launch (so it is
// zeroed once by its owner, and a CUDA graph can replay the launch). Included by fast_kernel.cu.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fast_policy.hpp"

namespace mlaplan::cuda_detail::fast {

// The workspace: a header, then one published word per tile at a fixed place, so a workspace sized
// for some batch serves every smaller one: the words a launch uses were put back to zero by the
// launch before it.
struct Header {
  unsigned int done;  // blocks done reading published words in this launch; the last resets them
  unsigned int pad[3];
};
// A published word: a tile's aggregate, or its inclusive prefix, with flags, in one 64-bit word
// written and read whole, so a reader that sees a flag sees the value (no fence, no second load).
constexpr uint64_t kWordPrefix = uint64_t{1} << 63;     // value: the padded total up to and including this tile
constexpr uint64_t kWordAggregate = uint64_t{1} << 62;  // value: this tile's padded total
constexpr uint64_t kWordBad = uint64_t{1} << 61;        // offsets decrease in the tiles the value covers
constexpr uint64_t kWordValue = kWordBad - 1;           // E below 2^61
constexpr size_t kWordsOffset = sizeof(Header);

__device__ __forceinline__ void publish(uint64_t* word, uint64_t value) { *static_cast<volatile uint64_t*>(word) = value; }

// Decoupled look-back (as CUB's DeviceScan): the tile's exclusive prefix and whether offsets
// decrease before it, given the tile's own padded total `tile_sum` and whether its offsets decrease
// (`tile_bad`). The publishing block puts out the tile's aggregate at once and its inclusive prefix
// once known. The first warp reads the words of up to 32 earlier tiles at a time, nearest first,
// and stops at the nearest inclusive prefix; the other warps wait at the barrier (a whole block
// reading more words a round, with a block-wide reduction each, was slower: docs/performance.md).
// Tiles follow blockIdx and blocks start in that order, so every word waited for belongs to a block
// that has started.
__device__ __forceinline__ uint64_t look_back(uint64_t* words, uint64_t tile, uint64_t tile_sum, bool tile_bad,
                                              bool publisher, bool& bad_before) {
  __shared__ uint64_t s_prefix;
  __shared__ bool s_bad;
  if (threadIdx.x < 32) {
    const unsigned lane = threadIdx.x;
    if (publisher && lane == 0)
      publish(&words[tile], (tile == 0 ? kWordPrefix : kWordAggregate) | (tile_bad ? kWordBad : 0) | tile_sum);
    uint64_t prefix = 0;
    bool bad = false;
    for (int64_t end = static_cast<int64_t>(tile); end > 0; end -= 32) {
      const int64_t j = end - 1 - lane;
      uint64_t w = kWordPrefix;  // before tile 0: an inclusive prefix of 0
      if (j >= 0)
        while (((w = *static_cast<volatile uint64_t*>(&words[j])) & (kWordPrefix | kWordAggregate)) == 0) {
        }
      const unsigned prefixes = __ballot_sync(~0u, (w & kWordPrefix) != 0);
      const bool counts = prefixes == 0 || lane < static_cast<unsigned>(__ffs(prefixes));  // up to the nearest prefix
      uint64_t value = counts ? (w & kWordValue) : 0;
#pragma unroll
      for (int o = 16; o > 0; o /= 2) value += __shfl_xor_sync(~0u, value, o);
      prefix += value;
      bad |= __any_sync(~0u, counts && (w & kWordBad) != 0);
      if (prefixes) break;
    }
    if (lane == 0) {
      s_prefix = prefix;
      s_bad = bad;
      if (publisher && tile > 0) publish(&words[tile], kWordPrefix | (tile_bad || bad ? kWordBad : 0) | (prefix + tile_sum));
    }
  }
  __syncthreads();
  bad_before = s_bad;
  return s_prefix;
}

// The last block to be done reading published words puts them back to zero for the next launch.
// `done` is thread 0's count of blocks done before it, taken once the block read its last word.
__device__ __forceinline__ void reset_words(Header* header, uint64_t* words, uint64_t tiles, unsigned int done) {
  __shared__ bool s_last_block;
  if (threadIdx.x == 0) s_last_block = done == gridDim.x - 1;
  __syncthreads();
  if (s_last_block) {
    for (uint64_t j = threadIdx.x; j < tiles; j += kThreads) words[j] = 0;
    if (threadIdx.x == 0) header->done = 0;
  }
}

}  // namespace mlaplan::cuda_detail::fast
