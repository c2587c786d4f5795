#include "cuda_timer.cuh"
#include "sm_clock.cuh"

namespace mlaplan::bench {

namespace {
__global__ void spin_kernel(long long cycles, long long* counted) {
  const long long start = clock64();
  long long now = start;
  while (now - start < cycles) now = clock64();
  *counted = now - start;
}
}  // namespace

double measure_sm_clock_mhz(cudaStream_t stream, long long cycles) {
  long long* counted = nullptr;
  cuda_check(cudaMalloc(&counted, sizeof(long long)), "cudaMalloc");
  CudaTimer timer;
  timer.start(stream);
  spin_kernel<<<1, 1, 0, stream>>>(cycles, counted);
  cuda_check(cudaGetLastError(), "launching the clock kernel");
  timer.stop(stream);
  const double us = timer.elapsed_us();
  long long host = 0;
  cuda_check(cudaMemcpy(&host, counted, sizeof host, cudaMemcpyDeviceToHost), "reading the cycle count");
  cudaFree(counted);
  return us > 0 ? static_cast<double>(host) / us : 0;
}

}  // namespace mlaplan::bench
