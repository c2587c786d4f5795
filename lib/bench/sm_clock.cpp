#include "sm_clock.hpp"

#include "cuda_timer.hpp"
#include "gpu_kernels.hpp"
#include "mlaplan/cuda_support/device_buffer.hpp"

namespace mlaplan::bench {

double measure_sm_clock_mhz(cudaStream_t stream, long long cycles) {
  cuda_support::DeviceBuffer<long long> counted;
  MLAPLAN_CUDA_CHECK(counted.allocate(1), kCuda, "cudaMalloc");
  CudaTimer timer;
  timer.start(stream);
  MLAPLAN_CUDA_CHECK(launch_spin_kernel(stream, cycles, counted.get()), kCuda, "launching the clock kernel");
  timer.stop(stream);
  const double us = timer.elapsed_us();
  long long host = 0;
  MLAPLAN_CUDA_CHECK(cudaMemcpy(&host, counted.get(), sizeof host, cudaMemcpyDeviceToHost), kCuda,
                     "reading the cycle count");
  return us > 0 ? static_cast<double>(host) / us : 0;
}

}  // namespace mlaplan::bench
