// The CPU reference planner: a plain transliteration of the loop in semantics.md. Every other
// implementation is checked against it, so it stays simple rather than fast.
#pragma once

#include "mlaplan/batch.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan {

// Plans a validated batch. Throws InfeasibleBatch when it does not fit in max_chunks.
PlanTables plan_reference(const Batch& batch);

}  // namespace mlaplan
