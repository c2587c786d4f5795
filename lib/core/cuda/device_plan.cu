// The engine-facing entry points (mlaplan/device_plan.hpp): host-side argument checks, then the
// chosen kernel's launcher. Nothing here synchronises, allocates or copies, so it is graph-safe.
#include "kernels.hpp"
#include "mlaplan/device_plan.hpp"

namespace mlaplan {

size_t plan_workspace_bytes(uint32_t batch_size, uint32_t /*max_chunks*/, GpuKernel kernel) {
  return kernel == GpuKernel::fast ? cuda_detail::fast_workspace_bytes(batch_size) : 0;
}

cudaError_t plan_on_device(const DevicePlanArgs& args, void* workspace, size_t workspace_bytes, cudaStream_t stream,
                           GpuKernel kernel) {
  const bool has_sequences = args.batch_size > 0;
  if (args.input_row_offsets == nullptr || args.buffer_row_offsets == nullptr || args.buffer_lengths == nullptr ||
      args.status == nullptr || (has_sequences && (args.cache_lengths == nullptr || args.cache_offsets == nullptr)))
    return cudaErrorInvalidValue;
  if (args.page_size < 1 || args.buffer_token_size < 1 || args.buffer_token_size > 0x7fffffffu || args.max_chunks < 1)
    return cudaErrorInvalidValue;
  if (args.batch_size == UINT32_MAX) return cudaErrorInvalidValue;  // B + 1 offsets must be countable in 32 bits
  const size_t needed = plan_workspace_bytes(args.batch_size, args.max_chunks, kernel);
  if (needed > 0 && (workspace == nullptr || workspace_bytes < needed)) return cudaErrorInvalidValue;
  return kernel == GpuKernel::fast ? cuda_detail::launch_fast(args, workspace, stream)
                                   : cuda_detail::launch_max_port(args, stream);
}

cudaError_t plan_kernels_loadable() { return cuda_detail::check_kernel_image(); }

}  // namespace mlaplan
