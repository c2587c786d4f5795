// The fastest CPU planner: the closed-form clamp formulas of semantics.md' properties instead of
// the seed's per-sequence chunk loop. Bit-identical to plan_reference and refuses the same batches.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan {

// Where the tables go: caller-owned, M x (B+1), M x B and M values (pinned host memory, say).
struct PlanTablesView {
  uint32_t* buffer_row_offsets = nullptr;
  uint32_t* cache_offsets = nullptr;
  int32_t* buffer_lengths = nullptr;
};

// Plans a validated batch into `out`. `starts` is scratch for the B+1 prefix sums, kept by the
// caller so a hot loop allocates nothing. Throws InfeasibleBatch (via require_feasible), and
// Interrupted when `stop` is given and turns true (polled once per chunk).
void plan_fast_cpu_into(const Batch& batch, PlanTablesView out, std::vector<uint32_t>& starts,
                        const std::atomic<bool>* stop = nullptr);

// The same into freshly allocated tables.
PlanTables plan_fast_cpu(const Batch& batch, const std::atomic<bool>* stop = nullptr);

}  // namespace mlaplan
