// The engine-facing GPU planner: plan from device pointers on the caller's stream.
//
// Like CUB, it is a two-phase call: ask for the workspace size once, allocate it yourself, then
// call plan_on_device as often as you like. The call never synchronises, allocates or copies
// between host and device, so it can be captured in a CUDA graph. Problems with the batch are
// reported through a device-side DevicePlanStatus the caller reads whenever it likes; the tables
// of a refused batch are never a silently truncated plan (every buffer_lengths entry is -1).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "mlaplan/device_plan_status.hpp"
#include "mlaplan/gpu_kernel.hpp"

namespace mlaplan {

struct DevicePlanArgs {
  const uint32_t* input_row_offsets = nullptr;  // device, B + 1 values
  const uint32_t* cache_lengths = nullptr;      // device, B values
  uint32_t batch_size = 0;                      // B
  uint32_t page_size = 1;                       // P >= 1
  uint32_t buffer_token_size = 1;               // N, 1 .. 2^31 - 1
  uint32_t max_chunks = 1;                      // M >= 1
  uint32_t* buffer_row_offsets = nullptr;       // device, M x (B + 1), row-major by chunk
  uint32_t* cache_offsets = nullptr;            // device, M x B
  int32_t* buffer_lengths = nullptr;            // device, M
  DevicePlanStatus* status = nullptr;           // device, one value
};

// Bytes of workspace plan_on_device needs for this shape (possibly 0). Host-only, no CUDA call.
size_t plan_workspace_bytes(uint32_t batch_size, uint32_t max_chunks, GpuKernel kernel = GpuKernel::fast);

// Enqueues the plan on `stream`. Returns cudaErrorInvalidValue for bad host-side arguments (null
// pointers, a zero size, too small a workspace) and the launch error, if any; batch problems go to
// args.status. `workspace` must be device memory of at least plan_workspace_bytes(...) bytes,
// zeroed once before its first use (cudaMemset) and not shared between concurrent calls.
cudaError_t plan_on_device(const DevicePlanArgs& args, void* workspace, size_t workspace_bytes, cudaStream_t stream,
                           GpuKernel kernel = GpuKernel::fast);

// cudaSuccess when this build holds machine code or PTX the current device can run; else the error
// loading the kernels gives (cudaErrorNoKernelImageForDevice, ...). Call it once before planning.
cudaError_t plan_kernels_loadable();

}  // namespace mlaplan
