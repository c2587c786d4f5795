// How the alignment of each block's range of a row decides the write bandwidth of the planner's
// tables (docs/history/performance-rounds.md, round 6). Two tables of M = 16 rows by B cells, written as the fast
// kernel writes them: blocks of 256 threads, 2048 columns each, row by row, one 16-byte vector per
// thread and run. The first table's row pitch varies, so each block's range in a row is only as
// aligned as the pitch allows, or is moved to the next boundary of `align` cells. Standalone:
//
//   nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 scripts/experiments/store_alignment.cu -o store_alignment
//   ./store_alignment
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

namespace {

constexpr uint32_t kRows = 16;
constexpr uint32_t kTile = 2048;
constexpr uint32_t kBlock = 256;

__device__ uint4 cells(uint32_t s0, uint32_t cn, uint32_t n, bool cache) {
  uint32_t v[4];
  for (int k = 0; k < 4; ++k) {
    const uint32_t s = s0 + 37 * k;
    v[k] = cache ? min(max(cn, s) - s, n) : min(max(s, cn) - cn, n);
  }
  return make_uint4(v[0], v[1], v[2], v[3]);
}

// Block ranges of the first table start at c * pitch + b0, rounded down to `align` cells (1: as is).
__global__ void __launch_bounds__(kBlock) fill(uint32_t* t1, uint32_t* t2, uint32_t b, uint64_t pitch, uint32_t align) {
  const uint64_t b0 = uint64_t{blockIdx.x} * kTile;
  const uint64_t col = 4 * threadIdx.x;
  for (uint32_t c = 0; c < kRows; ++c) {
    const uint64_t start = (uint64_t{c} * pitch + b0) / align * align;
    const uint32_t cn = c * (1u << 20);
    for (uint64_t half = 0; half < kTile; half += kTile / 2) {
      *reinterpret_cast<uint4*>(t1 + start + half + col) = cells(static_cast<uint32_t>(start + half + col), cn, 1u << 20, false);
      *reinterpret_cast<uint4*>(t2 + uint64_t{c} * b + b0 + half + col) =
          cells(static_cast<uint32_t>(b0 + half + col), cn, 1u << 20, true);
    }
  }
}

bool ok(cudaError_t e) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "store_alignment: %s\n", cudaGetErrorString(e));
  return false;
}

}  // namespace

int main() {
  for (uint32_t b : {1u << 20, 1u << 21, 1u << 22}) {
    uint32_t *t1 = nullptr, *t2 = nullptr;
    if (!ok(cudaMalloc(&t1, 4ull * kRows * (b + 600))) || !ok(cudaMalloc(&t2, 4ull * kRows * b))) return 1;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    const double mb = 8.0 * kRows * b / 1e6;
    // The best of 5 batches of 20 back-to-back launches, per launch.
    auto time = [&](const char* name, auto launch) {
      for (int i = 0; i < 5; ++i) launch();
      float best = 1e30f;
      for (int rep = 0; rep < 5; ++rep) {
        cudaEventRecord(e0);
        for (int i = 0; i < 20; ++i) launch();
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        if (ms < best) best = ms;
      }
      const double us = best * 1000 / 20;
      std::printf("  %-48s %8.2f us  %6.0f GB/s\n", name, us, mb / us * 1e3);
    };
    std::printf("B = %u, M = %u: %.0f MB\n", b, kRows, mb);
    time("two memsets of the same bytes", [&] {
      cudaMemsetAsync(t1, 1, 4ull * kRows * b);
      cudaMemsetAsync(t2, 1, 4ull * kRows * b);
    });
    for (uint32_t extra : {0u, 4u, 8u, 16u, 32u, 64u, 512u}) {
      char name[64];
      std::snprintf(name, sizeof name, "pitch B + %u", extra);
      time(name, [&] { fill<<<b / kTile, kBlock>>>(t1, t2, b, uint64_t{b} + extra, 1); });
    }
    for (uint32_t align : {8u, 32u, 64u}) {
      char name[64];
      std::snprintf(name, sizeof name, "pitch B + 4, ranges aligned to %u cells", align);
      time(name, [&] { fill<<<b / kTile, kBlock>>>(t1, t2, b, uint64_t{b} + 4, align); });
    }
    if (!ok(cudaGetLastError())) return 1;
    cudaFree(t1);
    cudaFree(t2);
  }
  return 0;
}
