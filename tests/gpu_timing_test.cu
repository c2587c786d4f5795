// Tuning harness, disabled by default (run with --gtest_also_run_disabled_tests): times an empty
// kernel launch, a device-to-device copy, and the max-port and fast kernels side by side for
// M = 16, page 128, and prints a table. CUDA events around each launch, warm-up, median.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "gpu_test_support.hpp"
#include "mlaplan/device_plan.hpp"

namespace mlaplan::gpu_test {
namespace {

__global__ void empty_kernel() {}

// The best a write-only kernel can do: 16-byte stores, grid-stride, fully coalesced. It bounds
// what the planner's fill (which only writes) can reach, apart from the copy's read+write rate.
__global__ void write_ceiling_kernel(uint4* out, size_t n, uint32_t v) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    out[i] = make_uint4(v, v + 1, v + 2, v + 3);
}

// Batch sizes from MLAPLAN_TIMING_SIZES ("1024,1048576"), else the full list.
std::vector<uint32_t> timing_sizes() {
  std::vector<uint32_t> sizes{1u, 16u, 128u, 1024u, 16384u, 131072u, 1048576u, 4194304u};
  if (const char* env = std::getenv("MLAPLAN_TIMING_SIZES")) {
    sizes.clear();
    std::stringstream ss(env);
    for (std::string item; std::getline(ss, item, ',');) sizes.push_back(static_cast<uint32_t>(std::stoul(item)));
  }
  return sizes;
}

// Median of `samples` event-timed runs of `enqueue` (after `warmup` untimed ones), in microseconds.
template <typename F>
double median_us(cudaStream_t stream, int warmup, int samples, F enqueue) {
  cudaEvent_t start, stop;
  EXPECT_EQ(cudaEventCreate(&start), cudaSuccess);
  EXPECT_EQ(cudaEventCreate(&stop), cudaSuccess);
  for (int i = 0; i < warmup; ++i) enqueue();
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<double> t;
  for (int i = 0; i < samples; ++i) {
    EXPECT_EQ(cudaEventRecord(start, stream), cudaSuccess);
    enqueue();
    EXPECT_EQ(cudaEventRecord(stop, stream), cudaSuccess);
    EXPECT_EQ(cudaEventSynchronize(stop), cudaSuccess);
    float ms = 0;
    EXPECT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
    t.push_back(ms * 1000.0);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

TEST(GpuTiming, DISABLED_FastVsMaxPortVsEmptyVsCopy) {
  MLAPLAN_REQUIRE_GPU();
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);

  const double empty_us = median_us(stream, 50, 501, [&] { empty_kernel<<<1, 1, 0, stream>>>(); });
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  // Device-to-device copy of 2 GiB: bytes read + written over time.
  const size_t copy_bytes = size_t{2} << 30;
  DeviceBuffer<unsigned char> src, dst;
  CUDA_OK(src.allocate(copy_bytes));
  CUDA_OK(dst.allocate(copy_bytes));
  ASSERT_EQ(cudaMemset(src.get(), 0x5A, copy_bytes), cudaSuccess);
  const double copy_us = median_us(stream, 3, 21, [&] {
    EXPECT_EQ(cudaMemcpyAsync(dst.get(), src.get(), copy_bytes, cudaMemcpyDeviceToDevice, stream), cudaSuccess);
  });
  const double copy_gbs = 2.0 * copy_bytes / copy_us / 1e3;
  // Write-only ceilings over the bytes of the B = 1M, M = 16 tables (134 MB) and over 2 GiB.
  const size_t table_bytes = size_t{2} * 16 * (1048576 + 1) * 4;
  for (size_t bytes : {table_bytes, copy_bytes}) {
    const double memset_us = median_us(stream, 3, 21, [&] {
      EXPECT_EQ(cudaMemsetAsync(dst.get(), 0x11, bytes, stream), cudaSuccess);
    });
    const double kernel_us = median_us(stream, 3, 21, [&] {
      write_ceiling_kernel<<<prop.multiProcessorCount * 8, 256, 0, stream>>>(reinterpret_cast<uint4*>(dst.get()), bytes / 16, 7);
    });
    std::printf("write-only over %.0f MB: memset %.1f us = %.0f GB/s; uint4 kernel %.1f us = %.0f GB/s\n", bytes / 1e6,
                memset_us, bytes / memset_us / 1e3, kernel_us, bytes / kernel_us / 1e3);
  }

  std::printf("\nGPU: %s (%d SMs); M = 16, page 128; median of CUDA-event-timed launches\n", prop.name,
              prop.multiProcessorCount);
  std::printf("| B | empty launch us | copy GB/s | max-port us | fast us | fast GB/s | fast %% of copy | fast / empty | max-port / fast |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  const uint32_t m = 16;
  std::mt19937_64 rng(99);
  const bool with_seed = std::getenv("MLAPLAN_TIMING_NO_SEED") == nullptr;
  for (uint32_t b : timing_sizes()) {
    Batch batch;
    batch.page_size = 128;
    std::vector<uint64_t> raw(b);
    for (auto& r : raw) r = uniform(rng, 1, 900);  // E stays below 2^32 at B = 4M
    set_lengths(batch, raw, rng);
    const uint64_t e = padded_total(batch);
    const uint32_t n = static_cast<uint32_t>((e + m - 1) / m);  // all 16 chunks used
    DeviceBuffer<uint32_t> offsets, cache, rows, cache_out;
    DeviceBuffer<int32_t> lengths;
    DeviceBuffer<DevicePlanStatus> status;
    DeviceBuffer<unsigned char> workspace;
    CUDA_OK(offsets.allocate(size_t{b} + 1));
    CUDA_OK(cache.allocate(b));
    CUDA_OK(rows.allocate(size_t{m} * (b + 1)));
    CUDA_OK(cache_out.allocate(size_t{m} * b));
    CUDA_OK(lengths.allocate(m));
    CUDA_OK(status.allocate(1));
    CUDA_OK(workspace.allocate(plan_workspace_bytes(b, m, GpuKernel::fast) + 16));
    ASSERT_EQ(cudaMemset(workspace.get(), 0, workspace.bytes()), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(offsets.get(), batch.input_row_offsets.data(), (size_t{b} + 1) * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(cache.get(), batch.cache_lengths.data(), size_t{b} * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    DevicePlanArgs a;
    a.input_row_offsets = offsets.get();
    a.cache_lengths = cache.get();
    a.batch_size = b;
    a.page_size = 128;
    a.buffer_token_size = n;
    a.max_chunks = m;
    a.buffer_row_offsets = rows.get();
    a.cache_offsets = cache_out.get();
    a.buffer_lengths = lengths.get();
    a.status = status.get();
    auto plan = [&](GpuKernel k) {
      EXPECT_EQ(plan_on_device(a, workspace.get(), workspace.bytes(), stream, k), cudaSuccess);
    };
    const double fast_us = median_us(stream, 20, 201, [&] { plan(GpuKernel::fast); });
    // The seed is O(B^2): a few samples suffice where one launch takes seconds.
    const int seed_samples = b >= 1048576 ? 3 : b >= 131072 ? 11 : 101;
    const double seed_us =
        with_seed ? median_us(stream, b >= 1048576 ? 1 : 5, seed_samples, [&] { plan(GpuKernel::max_port); }) : 0.0;
    DevicePlanStatus st{};
    ASSERT_EQ(cudaMemcpy(&st, status.get(), sizeof(st), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(st.code, kPlanOk);
    const double bytes = (2.0 * b + 1) * 4 + (2.0 * b + 1) * m * 4 + m * 4;  // inputs read once, tables written
    const double fast_gbs = bytes / fast_us / 1e3;
    std::printf("| %u | %.2f | %.0f | %.2f | %.2f | %.0f | %.1f%% | %.2fx | %.1fx |\n", b, empty_us, copy_gbs, seed_us,
                fast_us, fast_gbs, 100.0 * fast_gbs / copy_gbs, fast_us / empty_us, seed_us / fast_us);
    std::fflush(stdout);
  }
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace mlaplan::gpu_test
