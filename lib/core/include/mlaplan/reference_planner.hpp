// The CPU reference planner: a plain transliteration of the loop in semantics.md. Every other
// implementation is checked against it, so it stays simple rather than fast.
#pragma once

#include <atomic>

#include "mlaplan/batch.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan {

// Plans a validated batch. Throws InfeasibleBatch when it does not fit in max_chunks, and
// Interrupted when `stop` is given and turns true (it is polled once per sequence: a batch at the
// memory limit takes seconds).
PlanTables plan_reference(const Batch& batch, const std::atomic<bool>* stop = nullptr);

}  // namespace mlaplan
