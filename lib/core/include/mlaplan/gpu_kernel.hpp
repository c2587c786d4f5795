// The GPU planner's kernels.
#pragma once

namespace mlaplan {

// seed: a faithful port of the seed's kernel (one thread per sequence, each re-summing all earlier
// sequences): the baseline. fast: O(B + M*B) work with coalesced writes.
enum class GpuKernel { seed, fast };

inline const char* to_string(GpuKernel kernel) { return kernel == GpuKernel::seed ? "seed" : "fast"; }

}  // namespace mlaplan
