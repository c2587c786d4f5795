// Evicts the GPU's L2 before a cold sample by overwriting a buffer twice its size (stream-ordered).
#pragma once

#include <cuda_runtime_api.h>

#include "cuda_wording.hpp"
#include "mlaplan/cuda_support/device_buffer.hpp"

namespace mlaplan::bench {

class L2Flush {
 public:
  L2Flush() {
    int device = 0, l2 = 0;
    MLAPLAN_CUDA_CHECK(cudaGetDevice(&device), kCuda, "cudaGetDevice");
    MLAPLAN_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), kCuda, "reading the L2 size");
    MLAPLAN_CUDA_CHECK(buffer_.allocate(2 * static_cast<size_t>(l2)), kCuda, "allocating the L2 flush buffer");
  }

  void flush(cudaStream_t s) {
    if (buffer_.size())
      MLAPLAN_CUDA_CHECK(cudaMemsetAsync(buffer_.get(), ++value_, buffer_.bytes(), s), kCuda, "flushing L2");
  }

 private:
  cuda_support::DeviceBuffer<unsigned char> buffer_;
  unsigned char value_ = 0;
};

}  // namespace mlaplan::bench
