// Plans the worked example of semantics.md through mlaplan::core only: the reference and the
// closed-form CPU planner, and with CUDA and a GPU, plan_on_device on the caller's stream. Prints the
// buffer_lengths row and exits 1 when the planners disagree.
#include <cstdio>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/reference_planner.hpp"
#if CONSUMER_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "mlaplan/device_plan.hpp"
#endif

int main() {
  mlaplan::Batch batch;
  batch.page_size = 128;
  batch.buffer_token_size = 512;
  batch.max_chunks = 4;
  batch.cache_lengths = {500, 0, 100};
  batch.input_row_offsets = {0, 9, 209, 229};
  mlaplan::validate_batch(batch);
  const mlaplan::PlanTables ref = mlaplan::plan_reference(batch);
  const mlaplan::PlanTables fast = mlaplan::plan_fast_cpu(batch);
  std::printf("buffer_lengths:");
  for (int32_t len : ref.buffer_lengths) std::printf(" %d", len);
  std::printf("\n");
  if (ref != fast) {
    std::printf("the reference and the fast CPU planner disagree\n");
    return 1;
  }
#if CONSUMER_HAVE_CUDA
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("gpu: none, skipped\n");
    return 0;
  }
  const uint32_t b = batch.batch_size(), m = batch.max_chunks;
  mlaplan::DevicePlanArgs a;
  a.batch_size = b;
  a.page_size = batch.page_size;
  a.buffer_token_size = batch.buffer_token_size;
  a.max_chunks = m;
  uint32_t *offsets, *cache, *rows, *cache_out;
  int32_t* lengths;
  mlaplan::DevicePlanStatus* status;
  void* workspace = nullptr;
  auto device_alloc = [](auto** ptr, size_t bytes) { cudaMalloc(reinterpret_cast<void**>(ptr), bytes); };
  const size_t ws_bytes = mlaplan::plan_workspace_bytes(b, m);
  device_alloc(&offsets, (b + 1) * 4);
  device_alloc(&cache, b * 4);
  device_alloc(&rows, m * (b + 1) * 4);
  device_alloc(&cache_out, m * b * 4);
  device_alloc(&lengths, m * 4);
  device_alloc(&status, sizeof(*status));
  if (ws_bytes) device_alloc(&workspace, ws_bytes);
  if (ws_bytes) cudaMemset(workspace, 0, ws_bytes);  // the workspace starts zeroed, then resets itself
  cudaMemcpy(offsets, batch.input_row_offsets.data(), (b + 1) * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(cache, batch.cache_lengths.data(), b * 4, cudaMemcpyHostToDevice);
  a.input_row_offsets = offsets;
  a.cache_lengths = cache;
  a.buffer_row_offsets = rows;
  a.cache_offsets = cache_out;
  a.buffer_lengths = lengths;
  a.status = status;
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  if (mlaplan::plan_on_device(a, workspace, ws_bytes, stream) != cudaSuccess) {
    std::printf("gpu: plan_on_device failed\n");
    return 1;
  }
  std::vector<int32_t> gpu_lengths(m);
  cudaMemcpyAsync(gpu_lengths.data(), lengths, m * 4, cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  std::printf("gpu buffer_lengths:");
  for (int32_t len : gpu_lengths) std::printf(" %d", len);
  std::printf("\n");
  return gpu_lengths == ref.buffer_lengths ? 0 : 1;
#else
  return 0;
#endif
}
