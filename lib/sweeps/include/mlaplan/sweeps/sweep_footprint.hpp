// What a sweep holds in memory, counted once for the CLI (`mlaplan sweep`) and the Python API
// (`mlaplan.sweep`): per batch the struct, its arrays and an iteration count per setting (and a
// predicted time per setting and cost model), and per planning thread the max tables of the largest
// batch at the largest M. Forming counts batches as they come (BatchFormation::bytes_per_batch);
// require_sweep_fits checks the whole once they are there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/sweeps/sweep.hpp"

namespace mlaplan::sweeps {

struct SweepShape {
  uint64_t settings = 0, max_settings = 0, costs = 0, threads = 1;
  // An iteration count per setting, a predicted time per setting and cost model, and each thread's
  // sorted copy of one row's.
  uint64_t bytes_per_batch() const { return 4 * (settings * (1 + costs) + threads); }
};

// The rows a sweep of `grid` writes (policies x buffers x max_chunks for max, times the models and
// TPs swept) and the threads that plan them: one on the GPU, else one per core, at most one per row.
SweepShape sweep_shape(const SweepGrid& grid, bool gpu = false);

struct SweepFootprint {
  uint64_t batches = 0, sequences = 0, largest_batch = 0;
  void add(const Batch& b);
};

// How the caller's messages name what they refer to: "--batches 100" or "batches=100" (or the
// scenario file), "--max-chunks" or "max_chunks" and what joins it to a value (" " or "="), the
// limit as "--memory-limit 2.00 GiB (the default)" or "memory_limit=2.00 GiB", and the option that
// raises it.
struct SweepLimitNames {
  std::string batches, max_chunks, joined, limit, raise;
};

// InputError where the batches and counts, or one thread's tables, pass `limit` bytes.
void require_sweep_fits(const SweepShape& shape, const SweepGrid& grid, const SweepFootprint& f, uint64_t limit,
                        const SweepLimitNames& names);

}  // namespace mlaplan::sweeps
