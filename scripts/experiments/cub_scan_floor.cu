// The floor of the M = 1 plan at large B, measured with CUB: the same job as the fast kernel's
// (read cache_lengths and input_row_offsets, write the row offsets clamped to the buffer and the
// cache offsets, all 0 at M = 1) done by cub::DeviceScan::ExclusiveSum over the padded lengths, its
// output clamped on the way out, and a memset for the cache offsets. Each is timed hot (inputs and
// tables in place), by CUDA events around each launch and as one CUDA graph replay, median of many.
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -cudart static -o cub_scan_floor cub_scan_floor.cu
// Run:   ./cub_scan_floor [B=1048576] [page=128] [buffer=1073741823] [reps=2000]
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CHECK(x)                                                                        \
  do {                                                                                  \
    cudaError_t e = (x);                                                                \
    if (e != cudaSuccess) {                                                             \
      std::fprintf(stderr, "cub_scan_floor: %s: %s\n", #x, cudaGetErrorString(e));      \
      std::exit(3);                                                                     \
    }                                                                                   \
  } while (0)

struct PaddedLength {  // L[b] = round_up(cache[b] + new[b], page); L[B] = 0, so the scan's last cell is E
  const unsigned* cache;
  const unsigned* offsets;
  unsigned batch, page;
  __host__ __device__ unsigned long long operator()(unsigned b) const {
    if (b >= batch) return 0;
    const unsigned long long n = cache[b] + (offsets[b + 1] - offsets[b]);
    return (n + page - 1) / page * page;
  }
};
struct Clamp {  // buffer_row_offsets[0][b] = clamp(S[b], 0, N)
  unsigned long long n;
  __host__ __device__ unsigned operator()(unsigned long long s) const { return static_cast<unsigned>(s < n ? s : n); }
};

int main(int argc, char** argv) {
  const unsigned B = argc > 1 ? std::atoi(argv[1]) : 1u << 20, page = argc > 2 ? std::atoi(argv[2]) : 128;
  const unsigned long long N = argc > 3 ? std::atoll(argv[3]) : 0x3fffffff;
  const int reps = argc > 4 ? std::atoi(argv[4]) : 2000;
  std::mt19937 rng(1);
  std::vector<unsigned> cache(B), offsets(B + 1, 0);
  for (unsigned b = 0; b < B; ++b) {  // mean length 512, as `mlaplan bench --mean-length 512`
    cache[b] = rng() % 512;
    offsets[b + 1] = offsets[b] + rng() % 512;
  }
  unsigned *d_cache, *d_offsets, *d_rows, *d_co;
  CHECK(cudaMalloc(&d_cache, B * 4ull));
  CHECK(cudaMalloc(&d_offsets, (B + 1) * 4ull));
  CHECK(cudaMalloc(&d_rows, (B + 1) * 4ull));
  CHECK(cudaMalloc(&d_co, B * 4ull));
  CHECK(cudaMemcpy(d_cache, cache.data(), B * 4ull, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_offsets, offsets.data(), (B + 1) * 4ull, cudaMemcpyHostToDevice));
  auto in = thrust::make_transform_iterator(thrust::counting_iterator<unsigned>(0), PaddedLength{d_cache, d_offsets, B, page});
  auto out = thrust::make_transform_output_iterator(d_rows, Clamp{N});
  size_t temp_bytes = 0;
  CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, in, out, B + 1));
  void* temp;
  CHECK(cudaMalloc(&temp, temp_bytes));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  auto scan = [&] { CHECK(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in, out, B + 1, s)); };
  auto memset = [&] { CHECK(cudaMemsetAsync(d_co, 0, B * 4ull, s)); };
  // Checked against the host's scan first.
  scan();
  memset();
  CHECK(cudaStreamSynchronize(s));
  std::vector<unsigned> rows(B + 1);
  CHECK(cudaMemcpy(rows.data(), d_rows, (B + 1) * 4ull, cudaMemcpyDeviceToHost));
  unsigned long long S = 0;
  for (unsigned b = 0; b <= B; ++b) {
    if (rows[b] != std::min(S, N)) {
      std::fprintf(stderr, "cub_scan_floor: row %u is %u, the host says %llu\n", b, rows[b], std::min(S, N));
      return 1;
    }
    if (b < B) S += PaddedLength{cache.data(), offsets.data(), B, page}(b);
  }
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  auto median = [&](auto&& work) {
    for (int i = 0; i < 50; ++i) work();
    std::vector<float> t(reps);
    for (int i = 0; i < reps; ++i) {
      CHECK(cudaEventRecord(e0, s));
      work();
      CHECK(cudaEventRecord(e1, s));
      CHECK(cudaEventSynchronize(e1));
      CHECK(cudaEventElapsedTime(&t[i], e0, e1));
    }
    std::sort(t.begin(), t.end());
    return 1000.0 * t[reps / 2];
  };
  auto graph_of = [&](auto&& work) {
    cudaGraph_t g;
    cudaGraphExec_t x;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    work();
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&x, g, 0));
    return x;
  };
  cudaGraphExec_t g_scan = graph_of(scan), g_both = graph_of([&] { scan(); memset(); });
  cudaGraphExec_t g_empty = graph_of([&] {});
  const double scan_us = median(scan), both_us = median([&] { scan(); memset(); });
  const double g_scan_us = median([&] { CHECK(cudaGraphLaunch(g_scan, s)); });
  const double g_both_us = median([&] { CHECK(cudaGraphLaunch(g_both, s)); });
  const double g_empty_us = median([&] { CHECK(cudaGraphLaunch(g_empty, s)); });
  std::printf("B = %u, M = 1, page %u: CUB DeviceScan::ExclusiveSum (%zu B of temp storage), hot, median of %d\n", B, page,
              temp_bytes, reps);
  std::printf("  scan alone (row offsets)               %8.2f us   graph %8.2f us\n", scan_us, g_scan_us);
  std::printf("  scan + memset (row and cache offsets)  %8.2f us   graph %8.2f us\n", both_us, g_both_us);
  std::printf("  empty graph                                          graph %8.2f us\n", g_empty_us);
  return 0;
}
