// A pair of CUDA events timing work on one stream, in microseconds of GPU time.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda_check.cuh"

namespace mlaplan::bench {

class CudaTimer {
 public:
  CudaTimer() {
    cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~CudaTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  CudaTimer(const CudaTimer&) = delete;
  CudaTimer& operator=(const CudaTimer&) = delete;

  void start(cudaStream_t s) { cuda_check(cudaEventRecord(start_, s), "cudaEventRecord"); }
  void stop(cudaStream_t s) { cuda_check(cudaEventRecord(stop_, s), "cudaEventRecord"); }
  // Waits for the stop event.
  double elapsed_us() {
    cuda_check(cudaEventSynchronize(stop_), "waiting for the timed work");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms * 1000.0;
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace mlaplan::bench
