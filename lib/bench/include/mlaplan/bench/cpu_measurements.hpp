// Timing the host planners (cpu: the reference, cpu-fast: the closed form) on the host clock.
#pragma once

#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/bench/measurement.hpp"

namespace mlaplan::bench {

// Checks the kernel's plan of every input set against `references` (PlanMismatch), then times it,
// rotating among the sets. Cold: the host caches are flushed (a buffer of several times the
// last-level cache is rewritten) before each sample.
Measurement measure_cpu(Kernel kernel, const std::vector<Batch>& sets, const std::vector<PlanTables>& references, Mode mode,
                        const StoppingRule& rule);

}  // namespace mlaplan::bench
