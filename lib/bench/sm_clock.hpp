// The SM clock without NVML: a one-thread kernel spins for a fixed number of clock64() cycles and
// CUDA events time it, so cycles / microseconds = MHz. The kernel is in gpu_kernels.cu.
#pragma once

#include <cuda_runtime_api.h>

namespace mlaplan::bench {

// Spins `cycles` SM cycles on `stream` and returns the clock in MHz. Synchronises.
double measure_sm_clock_mhz(cudaStream_t stream, long long cycles = 20'000'000);

}  // namespace mlaplan::bench
