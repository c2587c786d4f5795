// Random batches aimed at the shapes that break planners, reproducible from a seed: the fuzzing
// source of `verify --fuzz` and of the randomized tests.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "mlaplan/batch.hpp"
#include "mlaplan/check/batch_limits.hpp"

namespace mlaplan::check {

struct BatchGeneratorOptions {
  uint32_t max_batch_size = 64;      // B of the ordinary shapes
  uint32_t large_batch_size = 4096;  // B of the "large-batch" shape, drawn from max_batch_size up to this
  uint32_t max_chunks = 4096;    // upper bound of M
  bool infeasible = true;        // also produce batches one past capacity
  BatchLimits limits;            // only these page sizes and max_chunks (the shapes adapt: see next())
};

// The most chunk rows a batch drawn with `options` can have: of the ordinary shapes (B up to
// max_batch_size) or of the large-batch shape (B up to large_batch_size, in at most 16 chunks plus
// the minimum's +1 and up to 3 of slack). With table_bytes it bounds the tables of every batch the
// generator makes, so verify can refuse options whose batches would not fit before drawing any.
uint64_t most_chunk_rows(const BatchGeneratorOptions& options, bool large_shape);
// The largest B of those shapes (the exact-multiple shape adds up to 3 empty sequences).
uint64_t most_batch_size(const BatchGeneratorOptions& options, bool large_shape);

class BatchGenerator {
 public:
  explicit BatchGenerator(uint64_t seed, BatchGeneratorOptions options = {});

  // A valid batch (validate_batch passes); `shape` names the kind, e.g. "exact-multiple".
  Batch next(std::string* shape = nullptr);

 private:
  uint64_t uniform(uint64_t lo, uint64_t hi);  // inclusive
  bool chance(double p);
  Batch sequences(uint32_t count, uint32_t page_size, uint32_t max_tokens, double empty_share);
  void set_max_chunks(Batch& b, int64_t relative_to_minimum);
  uint32_t page_size(uint32_t at_least = 1);
  void keep_to_limits(Batch& b, int64_t relative_to_minimum);

  std::mt19937_64 rng_;
  BatchGeneratorOptions options_;
};

}  // namespace mlaplan::check
