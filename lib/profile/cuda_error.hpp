// Turning CUDA return codes into DeviceError, so no call's failure goes unnoticed.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "mlaplan/errors.hpp"

namespace mlaplan::cuda_detail {

// Throws DeviceError naming `what` and the CUDA error when `status` is not cudaSuccess.
inline void check_cuda(cudaError_t status, const std::string& what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  if (status == cudaErrorMemoryAllocation) throw DeviceError("out of GPU memory: " + what);
  throw DeviceError("CUDA error in " + what + ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

}  // namespace mlaplan::cuda_detail
