// The engine API (device_plan.hpp): status codes for refused batches, argument checks, graph
// capture and replay (cuda_support::capture_graph), and tables past 2^32 cells (64-bit indexing).
#include <gtest/gtest.h>

#include "gpu_plan_harness.hpp"
#include "mlaplan/cuda_support/graph.hpp"

namespace mlaplan::gpu_test {
namespace {

const GpuKernel kKernels[] = {GpuKernel::fast, GpuKernel::max_port};

// Device copies of one batch and room for its tables.
struct DeviceBatch {
  DeviceBuffer<uint32_t> offsets, cache, rows, cache_out;
  DeviceBuffer<int32_t> lengths;
  DeviceBuffer<DevicePlanStatus> status;
  DeviceBuffer<unsigned char> workspace;
  DevicePlanArgs args;

  cudaError_t load(const std::vector<uint32_t>& h_offsets, const std::vector<uint32_t>& h_cache, uint32_t p, uint32_t n,
                   uint32_t m, GpuKernel kernel) {
    const size_t b = h_cache.size();
    cudaError_t e;
    if ((e = offsets.reserve(h_offsets.size())) || (e = cache.reserve(b + 1)) || (e = rows.reserve(size_t{m} * (b + 1))) ||
        (e = cache_out.reserve(size_t{m} * b + 1)) || (e = lengths.reserve(m)) || (e = status.reserve(1)) ||
        (e = workspace.reserve(plan_workspace_bytes(static_cast<uint32_t>(b), m, kernel) + 16)))
      return e;
    if ((e = cudaMemset(workspace.get(), 0, workspace.bytes())) ||
        (e = cudaMemcpy(offsets.get(), h_offsets.data(), h_offsets.size() * 4, cudaMemcpyHostToDevice)) ||
        (e = cudaMemcpy(cache.get(), h_cache.data(), b * 4, cudaMemcpyHostToDevice)))
      return e;
    if ((e = cudaDeviceSynchronize())) return e;  // later work may run on a non-blocking stream
    args = DevicePlanArgs{};
    args.input_row_offsets = offsets.get();
    args.cache_lengths = cache.get();
    args.batch_size = static_cast<uint32_t>(b);
    args.page_size = p;
    args.buffer_token_size = n;
    args.max_chunks = m;
    args.buffer_row_offsets = rows.get();
    args.cache_offsets = cache_out.get();
    args.buffer_lengths = lengths.get();
    args.status = status.get();
    return cudaSuccess;
  }
  cudaError_t poison() {
    cudaError_t e;
    if ((e = cudaMemset(rows.get(), kPoison, rows.bytes())) || (e = cudaMemset(cache_out.get(), kPoison, cache_out.bytes())) ||
        (e = cudaMemset(lengths.get(), kPoison, lengths.bytes())) || (e = cudaMemset(status.get(), kPoison, status.bytes())))
      return e;
    return cudaDeviceSynchronize();  // the plan may run on a non-blocking stream
  }
};

// Plans a batch the host cannot validate and returns its status and chunk lengths.
void plan_refused(const std::vector<uint32_t>& offsets, const std::vector<uint32_t>& cache, GpuKernel kernel,
                  DevicePlanStatus& status, std::vector<int32_t>& lengths, uint32_t m = 8) {
  DeviceBatch d;
  ASSERT_EQ(d.load(offsets, cache, 128, 4096, m, kernel), cudaSuccess);
  ASSERT_EQ(d.poison(), cudaSuccess);
  ASSERT_EQ(plan_on_device(d.args, d.workspace.get(), d.workspace.bytes(), nullptr, kernel), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  lengths.resize(m);
  ASSERT_EQ(cudaMemcpy(&status, d.status.get(), sizeof(status), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(lengths.data(), d.lengths.get(), m * 4, cudaMemcpyDeviceToHost), cudaSuccess);
}

// Offsets with one decrease at `at`; every other sequence 1 token long.
std::vector<uint32_t> offsets_with_decrease(size_t b, size_t at) {
  std::vector<uint32_t> o(b + 1);
  for (size_t i = 0; i <= b; ++i) o[i] = static_cast<uint32_t>(10 + i);
  o[at + 1] = o[at] - 3;
  return o;
}

TEST(GpuDevicePlan, DecreasingOffsetsAreReported) {
  MLAPLAN_REQUIRE_GPU();
  for (GpuKernel k : kKernels) {
    for (size_t b : {size_t{3}, size_t{5000}}) {  // one tile, several tiles
      for (size_t at : {size_t{0}, b / 2, b - 1}) {
        SCOPED_TRACE(std::string(to_string(k)) + " B=" + std::to_string(b) + " at=" + std::to_string(at));
        DevicePlanStatus st{};
        std::vector<int32_t> lengths;
        plan_refused(offsets_with_decrease(b, at), std::vector<uint32_t>(b, 0), k, st, lengths);
        EXPECT_EQ(st.code, kPlanBadOffsets);
        for (int32_t v : lengths) EXPECT_EQ(v, -1);
      }
    }
  }
  // Past 256 tiles the fast kernel looks back over several windows, so the flag must travel
  // through the earlier tiles' inclusive prefixes too.
  // At one chunk row every warp looks back (look_back_wide): the flag travels through it too.
  const size_t b = 600000;
  for (uint32_t m : {8u, 1u})
    for (size_t at : {size_t{0}, size_t{4000}, b / 2, b - 1}) {
      SCOPED_TRACE("fast B=" + std::to_string(b) + " M=" + std::to_string(m) + " at=" + std::to_string(at));
      DevicePlanStatus st{};
      std::vector<int32_t> lengths;
      plan_refused(offsets_with_decrease(b, at), std::vector<uint32_t>(b, 0), GpuKernel::fast, st, lengths, m);
      EXPECT_EQ(st.code, kPlanBadOffsets);
    }
}

TEST(GpuDevicePlan, OverflowIsReported) {
  MLAPLAN_REQUIRE_GPU();
  for (GpuKernel k : kKernels) {
    for (size_t b : {size_t{2}, size_t{5000}}) {
      SCOPED_TRACE(std::string(to_string(k)) + " B=" + std::to_string(b));
      std::vector<uint32_t> offsets(b + 1, 0), cache(b, 0);
      cache[b - 1] = 0xffffff00u;  // padded to 128: 2^32 - 128, plus one more page below overflows
      cache[0] = 300;
      DevicePlanStatus st{};
      std::vector<int32_t> lengths;
      plan_refused(offsets, cache, k, st, lengths);
      EXPECT_EQ(st.code, kPlanOverflow);
      EXPECT_EQ(st.padded_tokens, uint64_t{0xffffff00u} + 384);
      for (int32_t v : lengths) EXPECT_EQ(v, -1);
    }
  }
}

TEST(GpuDevicePlan, RejectsBadArguments) {
  MLAPLAN_REQUIRE_GPU();
  DeviceBatch d;
  // 50,000 sequences: past the sizes that plan without a workspace (one tile of 2,048).
  ASSERT_EQ(d.load(std::vector<uint32_t>(50001, 0), std::vector<uint32_t>(50000, 1), 1, 64, 4, GpuKernel::fast), cudaSuccess);
  ASSERT_GT(plan_workspace_bytes(50000, 4, GpuKernel::fast), 0u);
  EXPECT_EQ(plan_workspace_bytes(2048, 4, GpuKernel::fast), 0u);
  EXPECT_GT(plan_workspace_bytes(2049, 4, GpuKernel::fast), 0u);
  EXPECT_EQ(plan_workspace_bytes(50000, 4, GpuKernel::max_port), 0u);
  EXPECT_EQ(plan_on_device(d.args, nullptr, 0, nullptr, GpuKernel::fast), cudaErrorInvalidValue);
  EXPECT_EQ(plan_on_device(d.args, d.workspace.get(), 8, nullptr, GpuKernel::fast), cudaErrorInvalidValue);
  DevicePlanArgs a = d.args;
  a.status = nullptr;
  EXPECT_EQ(plan_on_device(a, d.workspace.get(), d.workspace.bytes(), nullptr, GpuKernel::fast), cudaErrorInvalidValue);
  a = d.args;
  a.buffer_token_size = 0x80000000u;
  EXPECT_EQ(plan_on_device(a, d.workspace.get(), d.workspace.bytes(), nullptr, GpuKernel::max_port), cudaErrorInvalidValue);
  a = d.args;
  a.max_chunks = 0;
  EXPECT_EQ(plan_on_device(a, d.workspace.get(), d.workspace.bytes(), nullptr, GpuKernel::max_port), cudaErrorInvalidValue);
}

// A graph captured once and replayed gives the same tables as the reference every time, which
// also checks that the workspace resets itself between replays.
TEST(GpuDevicePlan, GraphCaptureAndReplay) {
  MLAPLAN_REQUIRE_GPU();
  std::mt19937_64 rng(7);
  for (GpuKernel k : kKernels) {
    for (uint32_t b : {1000u, 100000u}) {
      SCOPED_TRACE(std::string(to_string(k)) + " B=" + std::to_string(b));
      Batch batch;
      batch.page_size = 64;
      std::vector<uint64_t> raw(b);
      for (auto& r : raw) r = uniform(rng, 0, 1000);
      set_lengths(batch, raw, rng);
      batch.max_chunks = 16;
      batch.buffer_token_size = static_cast<uint32_t>(padded_total(batch) / 15 + 1);
      const PlanTables ref = plan_reference(batch);

      DeviceBatch d;
      ASSERT_EQ(d.load(batch.input_row_offsets, batch.cache_lengths, batch.page_size, batch.buffer_token_size,
                       batch.max_chunks, k),
                cudaSuccess);
      cudaStream_t stream;
      CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      cuda_support::Capture graph = cuda_support::capture_graph(
          stream, [&] { return plan_on_device(d.args, d.workspace.get(), d.workspace.bytes(), stream, k); });
      ASSERT_TRUE(cuda_ok(graph.call));
      for (int replay = 0; replay < 3; ++replay) {
        ASSERT_EQ(d.poison(), cudaSuccess);
        CUDA_OK(graph.exec.launch(stream));
        CUDA_OK(cudaStreamSynchronize(stream));
        PlanTables got(b, batch.max_chunks);
        DevicePlanStatus st{};
        ASSERT_EQ(cudaMemcpy(got.buffer_row_offsets.data(), d.rows.get(), got.buffer_row_offsets.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(got.cache_offsets.data(), d.cache_out.get(), got.cache_offsets.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(got.buffer_lengths.data(), d.lengths.get(), got.buffer_lengths.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(&st, d.status.get(), sizeof(st), cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(st.code, kPlanOk);
        EXPECT_TRUE(got == ref) << "replay " << replay;
      }
      cudaStreamDestroy(stream);
    }
  }
}

// M * (B + 1) above 2^32 cells: rows past the 32-bit boundary must land where the closed form
// (semantics.md, "Properties") puts them. Needs about 36 GB of device memory.
TEST(GpuDevicePlan, TablesPast32BitIndexing) {
  MLAPLAN_REQUIRE_GPU();
  const uint32_t b = 1100000, m = 4096;
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  const size_t need = size_t{m} * (b + 1) * 8 + (size_t{1} << 30);
  if (free_bytes < need) GTEST_SKIP() << "needs " << need / (1 << 30) << " GiB of free device memory";
  ASSERT_GT(uint64_t{m} * (b + 1), uint64_t{1} << 32);
  std::mt19937_64 rng(32);
  Batch batch;
  batch.page_size = 1;
  std::vector<uint64_t> raw(b);
  for (auto& r : raw) r = uniform(rng, 0, 7);
  set_lengths(batch, raw, rng);
  const uint64_t e = padded_total(batch);
  batch.max_chunks = m;
  batch.buffer_token_size = static_cast<uint32_t>((e + m - 2) / (m - 1));  // uses about all chunks
  const PlanShape shape = plan_shape(batch);
  ASSERT_TRUE(shape.feasible);

  DeviceBatch d;
  ASSERT_EQ(d.load(batch.input_row_offsets, batch.cache_lengths, 1, batch.buffer_token_size, m, GpuKernel::fast), cudaSuccess);
  ASSERT_EQ(d.poison(), cudaSuccess);
  ASSERT_EQ(plan_on_device(d.args, d.workspace.get(), d.workspace.bytes(), nullptr, GpuKernel::fast), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  std::vector<uint64_t> start(b + 1, 0);
  for (uint32_t i = 0; i < b; ++i) start[i + 1] = start[i] + batch.padded_length(i);
  const uint64_t n = batch.buffer_token_size;
  auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; };
  for (uint32_t c : {0u, 1u, 3903u, 3904u, 3905u, 4094u, 4095u}) {
    std::vector<uint32_t> rows(b + 1), cache_out(b);
    ASSERT_EQ(cudaMemcpy(rows.data(), d.rows.get() + size_t{c} * (b + 1), rows.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(cache_out.data(), d.cache_out.get() + size_t{c} * b, cache_out.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    size_t bad = 0;
    for (uint32_t i = 0; i <= b; ++i) {
      const int64_t s = static_cast<int64_t>(start[i]), cn = static_cast<int64_t>(c * n);
      if (rows[i] != static_cast<uint32_t>(clamp(s - cn, 0, static_cast<int64_t>(n)))) ++bad;
      if (i < b && cache_out[i] != static_cast<uint32_t>(clamp(cn - s, 0, static_cast<int64_t>(batch.padded_length(i))))) ++bad;
    }
    EXPECT_EQ(bad, 0u) << "chunk row " << c;
  }
  std::vector<int32_t> lengths(m);
  ASSERT_EQ(cudaMemcpy(lengths.data(), d.lengths.get(), m * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  for (uint32_t c = 0; c < m; ++c) {
    const int64_t rest = static_cast<int64_t>(e) - static_cast<int64_t>(c * n);
    EXPECT_EQ(lengths[c], rest > 0 ? static_cast<int32_t>(std::min<int64_t>(rest, n)) : -1) << "chunk " << c;
  }
}

}  // namespace
}  // namespace mlaplan::gpu_test
