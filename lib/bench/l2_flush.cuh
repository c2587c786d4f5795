// Evicts the GPU's L2 before a cold sample by overwriting a buffer twice its size (stream-ordered).
#pragma once

#include <cuda_runtime_api.h>

#include "cuda_check.cuh"

namespace mlaplan::bench {

class L2Flush {
 public:
  L2Flush() {
    int device = 0, l2 = 0;
    cuda_check(cudaGetDevice(&device), "cudaGetDevice");
    cuda_check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "reading the L2 size");
    bytes_ = 2 * static_cast<size_t>(l2);
    if (bytes_) cuda_check(cudaMalloc(&buffer_, bytes_), "allocating the L2 flush buffer");
  }
  ~L2Flush() { cudaFree(buffer_); }
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;

  void flush(cudaStream_t s) {
    if (bytes_) cuda_check(cudaMemsetAsync(buffer_, ++value_, bytes_, s), "flushing L2");
  }

 private:
  void* buffer_ = nullptr;
  size_t bytes_ = 0;
  unsigned char value_ = 0;
};

}  // namespace mlaplan::bench
