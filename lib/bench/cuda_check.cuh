// CUDA return codes to DeviceError (exit 3), naming the call that failed.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "mlaplan/errors.hpp"

namespace mlaplan::bench {

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear a sticky launch error so later messages are about later calls
    throw DeviceError(std::string("bench: ") + what + ": " + cudaGetErrorString(e));
  }
}

}  // namespace mlaplan::bench
