// What a batch needs before any table is written: its padded total, the chunks it uses and
// whether it fits in max_chunks. Every planner refuses an infeasible batch the same way.
#pragma once

#include <cstdint>
#include <string>

#include "mlaplan/batch.hpp"

namespace mlaplan {

struct PlanShape {
  uint64_t padded_tokens = 0;   // E = S[B-1] + L[B-1]
  uint64_t last_start = 0;      // S[B-1], where the last sequence starts (0 for B == 0)
  uint64_t chunks_used = 0;     // ceil(E / N)
  uint64_t min_max_chunks = 1;  // smallest max_chunks that fits
  uint64_t input_tokens = 0;    // sum of cache_lengths + input lengths, before page padding
  bool feasible = true;
};

// Requires a batch that passed validate_batch.
PlanShape plan_shape(const Batch& batch);

// Computes the shape and throws InfeasibleBatch (message starts with the field, `max_chunks: ...`)
// when the batch does not fit.
PlanShape require_feasible(const Batch& batch);

}  // namespace mlaplan
