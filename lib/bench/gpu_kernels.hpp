// bench's own kernels, in gpu_kernels.cu, the one bench file nvcc compiles: each launcher enqueues
// its kernel on `stream` and returns the launch's status.
#pragma once

#include <cuda_runtime_api.h>

namespace mlaplan::bench {

// One thread that does nothing: the cost of a launch.
cudaError_t launch_empty_kernel(cudaStream_t stream);

// One thread that spins `cycles` SM cycles by clock64() and writes the cycles it counted to
// `*counted` (device memory).
cudaError_t launch_spin_kernel(cudaStream_t stream, long long cycles, long long* counted);

}  // namespace mlaplan::bench
