// The planners on host arrays: MAX's plan (closed form or the reference loop) and the engines' policies.
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/profile/stop_request.hpp"
#include "mlaplan/reference_planner.hpp"

namespace mlaplan::python {

using namespace nb::literals;

void bind_planners(nb::module_& m) {
  m.def(
      "plan_host",
      [](const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size, uint32_t max_chunks,
         bool reference) {
        const Batch b = host_batch(cache, offsets, page_size, buffer_token_size, max_chunks);
        // InfeasibleBatch first: the tables of a refused batch are never made.
        require_tables_fit(b, max_chunks, require_feasible(b).min_max_chunks);
        // A large plan takes a while: Ctrl-C stops it (the planners poll the stop flag).
        PlanTables t = interruptible_if(needs_worker(b, "max"), [&] {
          return reference ? plan_reference(b, profile::stop_flag()) : plan_fast_cpu(b, profile::stop_flag());
        });
        return tables_tuple(std::move(t));
      },
      "cache_lengths"_a, "input_row_offsets"_a, "page_size"_a, "buffer_token_size"_a, "max_chunks"_a, "reference"_a = false,
      "Plans on the CPU: (buffer_row_offsets, cache_offsets, buffer_lengths) as NumPy arrays.");

  m.def(
      "plan_shape",
      [](const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size) {
        const PlanShape s = plan_shape(host_batch(cache, offsets, page_size, buffer_token_size, 1));
        nb::dict d;
        d["padded_tokens"] = s.padded_tokens;
        d["chunks_used"] = s.chunks_used;
        d["min_max_chunks"] = s.min_max_chunks;
        return d;
      },
      "cache_lengths"_a, "input_row_offsets"_a, "page_size"_a, "buffer_token_size"_a,
      "MAX's plan's shape without its tables: {padded_tokens, chunks_used, min_max_chunks}, the last the smallest "
      "max_chunks that fits, as InfeasibleBatch and the device planner's status give it.");

  m.def(
      "plan_policy",
      [](const HostU32& cache, const HostU32& offsets, uint32_t page_size, uint32_t buffer_token_size, uint32_t max_chunks,
         const std::string& policy) {
        const Batch b = host_batch(cache, offsets, page_size, buffer_token_size, max_chunks);
        // guided:FILE reads its file (a FIFO blocks), and a large plan takes a while: Ctrl-C stops both.
        // Its tables weighed before they are made (as the CLI's --memory-limit does).
        policies::PolicyPlan p = interruptible_if(needs_worker(b, policy), [&] {
          return policies::plan_policy(b, policy_named(policy), [&](uint64_t rows, uint64_t needed) { require_tables_fit(b, rows, needed); });
        });
        const policies::PolicyOutcome o = p.outcome;
        return nb::make_tuple(tables_tuple(std::move(p.tables)), o.chunks, o.streamed_rows, o.payload_tokens);
      },
      "cache_lengths"_a, "input_row_offsets"_a, "page_size"_a, "buffer_token_size"_a, "max_chunks"_a, "policy"_a,
      "Plans under an engine's policy: ((tables), chunks_used, rows_streamed, tokens_streamed).");
}

}  // namespace mlaplan::python
