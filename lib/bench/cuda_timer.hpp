// A pair of CUDA events timing work on one stream, in microseconds of GPU time.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda_wording.hpp"

namespace mlaplan::bench {

class CudaTimer {
 public:
  CudaTimer() {
    MLAPLAN_CUDA_CHECK(cudaEventCreate(&start_), kCuda, "cudaEventCreate");
    MLAPLAN_CUDA_CHECK(cudaEventCreate(&stop_), kCuda, "cudaEventCreate");
  }
  ~CudaTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  CudaTimer(const CudaTimer&) = delete;
  CudaTimer& operator=(const CudaTimer&) = delete;

  void start(cudaStream_t s) { MLAPLAN_CUDA_CHECK(cudaEventRecord(start_, s), kCuda, "cudaEventRecord"); }
  void stop(cudaStream_t s) { MLAPLAN_CUDA_CHECK(cudaEventRecord(stop_, s), kCuda, "cudaEventRecord"); }
  // Waits for the stop event.
  double elapsed_us() {
    MLAPLAN_CUDA_CHECK(cudaEventSynchronize(stop_), kCuda, "waiting for the timed work");
    float ms = 0;
    MLAPLAN_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_), kCuda, "cudaEventElapsedTime");
    return ms * 1000.0;
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace mlaplan::bench
