// Launchers of the two planning kernels, called by plan_on_device (device_plan.cu) after it has
// checked the host-side arguments. Each enqueues on `stream` and returns the launch error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "mlaplan/device_plan.hpp"

namespace mlaplan::cuda_detail {

// The seed's kernel: one thread per sequence, each re-summing every earlier sequence. No workspace.
cudaError_t launch_max_port(const DevicePlanArgs& args, cudaStream_t stream);

// The fast kernel: O(B + M*B) work. Workspace bytes it needs for B sequences (0 when one tile
// holds the batch and a single launch does everything).
size_t fast_workspace_bytes(uint32_t batch_size);
cudaError_t launch_fast(const DevicePlanArgs& args, void* workspace, cudaStream_t stream);

// cudaSuccess when this build holds machine code or PTX the current device can run.
cudaError_t check_kernel_image();

}  // namespace mlaplan::cuda_detail
