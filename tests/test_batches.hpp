// Batches the tests build by hand: one validated constructor and the worked example of semantics.md.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "mlaplan/batch.hpp"

namespace mlaplan::test {

// A batch from (P, N, M, cache lengths, input row offsets), checked with validate_batch.
inline Batch make_batch(uint32_t p, uint32_t n, uint32_t m, std::vector<uint32_t> cache, std::vector<uint32_t> offsets) {
  Batch b;
  b.page_size = p;
  b.buffer_token_size = n;
  b.max_chunks = m;
  b.cache_lengths = std::move(cache);
  b.input_row_offsets = std::move(offsets);
  validate_batch(b);
  return b;
}

// The worked example of semantics.md: one full chunk, then two sequences sharing the second.
inline Batch worked_example_batch() { return make_batch(128, 512, 4, {500, 0, 100}, {0, 9, 209, 229}); }

// Its plan, checked by hand against semantics.md.
struct WorkedExamplePlan {
  std::vector<uint32_t> buffer_row_offsets{0, 512, 512, 512, 0, 0, 256, 384, 0, 0, 0, 0, 0, 0, 0, 0};
  std::vector<uint32_t> cache_offsets{0, 0, 0, 512, 0, 0, 512, 256, 128, 512, 256, 128};
  std::vector<int32_t> buffer_lengths{512, 384, -1, -1};
};

}  // namespace mlaplan::test
