// The GPU planner's kernels.
#pragma once

#include <optional>
#include <string_view>

namespace mlaplan {

// max_port: a faithful port of MAX's kernel (one thread per sequence, each re-summing all earlier
// sequences): the baseline. fast: O(B + M*B) work with coalesced writes.
enum class GpuKernel { max_port, fast };

inline const char* to_string(GpuKernel kernel) { return kernel == GpuKernel::max_port ? "max-port" : "fast"; }

// The kernel a user names: "fast" or "max-port", or "seed", max-port's name before 2026-12-01,
// still accepted on input. Anything else: nullopt.
inline std::optional<GpuKernel> gpu_kernel_named(std::string_view name) {
  if (name == "fast") return GpuKernel::fast;
  if (name == "max-port" || name == "seed") return GpuKernel::max_port;
  return std::nullopt;
}

}  // namespace mlaplan
