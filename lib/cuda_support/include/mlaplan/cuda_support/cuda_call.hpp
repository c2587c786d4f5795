// Checked CUDA calls, after nvbench's cuda_call.cuh. MLAPLAN_CUDA_CALL records a call's status with
// its text, file and line; MLAPLAN_CUDA_CHECK throws CudaError (a DeviceError: exit 3) when it failed.
// The message is worded the way the calling layer words it (a Wording), so what users read stays
// each layer's own; the call, file and line travel with the exception and into test failures.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "mlaplan/errors.hpp"

namespace mlaplan::cuda_support {

// One CUDA call's status and where it was made.
struct CudaCall {
  cudaError_t status;
  const char* call;  // the call as written
  const char* file;
  int line;
  bool ok() const { return status == cudaSuccess; }
};

#define MLAPLAN_CUDA_CALL(call) (::mlaplan::cuda_support::CudaCall{(call), #call, __FILE__, __LINE__})

// "file:line: call: cudaErrorName: description", for test failures and logs.
inline std::string describe(const CudaCall& c) {
  return std::string(c.file) + ":" + std::to_string(c.line) + ": " + c.call + ": " + cudaGetErrorName(c.status) + ": " +
         cudaGetErrorString(c.status);
}

// How a layer words a failed call: prefix, what was being done, ": ", the error's name (if
// with_name) and description. out_of_memory, if set, words an allocation failure as itself + what.
struct Wording {
  const char* prefix;
  bool with_name;
  const char* out_of_memory;
};

inline std::string message(const Wording& w, cudaError_t status, const std::string& what) {
  if (w.out_of_memory != nullptr && status == cudaErrorMemoryAllocation) return w.out_of_memory + what;
  std::string m = w.prefix + what + ": ";
  if (w.with_name) m += std::string(cudaGetErrorName(status)) + ": ";
  return m + cudaGetErrorString(status);
}

// A failed CUDA call: what() is the layer's message; call() says which call, where.
class CudaError : public DeviceError {
 public:
  CudaError(const std::string& message, const CudaCall& call) : DeviceError(message), call_(call) {}
  const CudaCall& call() const { return call_; }

 private:
  CudaCall call_;
};

// Throws CudaError for `c`, first clearing the runtime's last error, so that a non-sticky error is
// not reported again by the next call.
[[noreturn]] inline void raise(const CudaCall& c, const Wording& w, const std::string& what) {
  cudaGetLastError();
  throw CudaError(message(w, c.status, what), c);
}

inline void check(const CudaCall& c, const Wording& w, const std::string& what) {
  if (!c.ok()) raise(c, w, what);
}

}  // namespace mlaplan::cuda_support

// Makes `call` and throws CudaError worded by `wording` if it failed; `what` (what the call was
// doing) is only evaluated then.
#define MLAPLAN_CUDA_CHECK(call, wording, what)                                                      \
  do {                                                                                               \
    const ::mlaplan::cuda_support::CudaCall mlaplan_cuda_call_ = MLAPLAN_CUDA_CALL(call);            \
    if (!mlaplan_cuda_call_.ok()) ::mlaplan::cuda_support::raise(mlaplan_cuda_call_, wording, what); \
  } while (0)
