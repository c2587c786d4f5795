#include "gpu_kernels.hpp"

namespace mlaplan::bench {

namespace {
__global__ void empty_kernel() {}

__global__ void spin_kernel(long long cycles, long long* counted) {
  const long long start = clock64();
  long long now = start;
  while (now - start < cycles) now = clock64();
  *counted = now - start;
}
}  // namespace

cudaError_t launch_empty_kernel(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

cudaError_t launch_spin_kernel(cudaStream_t stream, long long cycles, long long* counted) {
  spin_kernel<<<1, 1, 0, stream>>>(cycles, counted);
  return cudaGetLastError();
}

}  // namespace mlaplan::bench
