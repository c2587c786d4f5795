// Both GPU kernels against the CPU reference: 100,000 random batches each (mostly small, batched
// many per launch sequence), the edge cases of semantics.md, and a few large batches.
#include <gtest/gtest.h>

#include <cstdio>

#include "gpu_plan_harness.hpp"
#include "test_batches.hpp"

namespace mlaplan::gpu_test {
namespace {

using mlaplan::test::make_batch;

// Batch sizes: mostly small, some around a tile (2048), a few up to 20,000.
uint32_t random_batch_size(std::mt19937_64& rng) {
  const uint64_t r = uniform(rng, 0, 999);
  if (r < 40) return 0;
  if (r < 600) return static_cast<uint32_t>(uniform(rng, 1, 16));
  if (r < 945) return static_cast<uint32_t>(uniform(rng, 17, 256));
  if (r < 995) return static_cast<uint32_t>(uniform(rng, 257, 4200));
  return static_cast<uint32_t>(uniform(rng, 4200, 20000));
}

// Table cells allowed for a batch of `b` sequences: the suite checks about 5,000 per batch on
// average, which keeps 2 x 100,000 batches within about half a minute.
uint64_t cell_budget(uint32_t b) { return b <= 16 ? (uint64_t{1} << 14) : b <= 256 ? (uint64_t{1} << 13) : (uint64_t{1} << 16); }

void random_batches(GpuKernel kernel, uint64_t seed) {
  MLAPLAN_REQUIRE_GPU();
  constexpr size_t kBatches = 100000;
  std::mt19937_64 rng(seed);
  PlanHarness harness;
  size_t wrong = 0, done = 0;
  while (done < kBatches && wrong == 0) {
    std::vector<Batch> group;
    uint64_t cells = 0;
    while (done + group.size() < kBatches && group.size() < 4000 && cells < (uint64_t{1} << 24)) {
      const uint32_t b = random_batch_size(rng);
      group.push_back(random_batch(rng, b, cell_budget(b)));
      cells += uint64_t{group.back().max_chunks} * (b + 1);
    }
    wrong += harness.run(group, kernel);
    done += group.size();
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(harness.checked(), kBatches);
  std::printf("%s kernel: %zu random batches checked, %zu of them infeasible\n", to_string(kernel), harness.checked(),
              harness.infeasible());
}

TEST(GpuDifferential, RandomBatchesFast) { random_batches(GpuKernel::fast, 20261129); }
TEST(GpuDifferential, RandomBatchesSeed) { random_batches(GpuKernel::max_port, 20261130); }

std::vector<Batch> edge_cases() {
  std::vector<Batch> v;
  // The worked example of semantics.md, and the same at and past capacity.
  v.push_back(make_batch(128, 512, 4, {500, 0, 100}, {0, 9, 209, 229}));
  v.push_back(make_batch(128, 512, 2, {500, 0, 100}, {0, 9, 209, 229}));
  v.push_back(make_batch(128, 512, 1, {500, 0, 100}, {0, 9, 209, 229}));
  // Empty batch, for several chunk counts.
  for (uint32_t m : {1u, 2u, 16u, 4096u}) v.push_back(make_batch(128, 512, m, {}, {7}));
  // All lengths zero: E == 0, every chunk unused.
  v.push_back(make_batch(128, 512, 3, {0, 0, 0}, {5, 5, 5, 5}));
  // Exact multiple of N (the last used chunk is full).
  v.push_back(make_batch(128, 256, 2, {256, 0}, {0, 0, 256}));
  // Trailing empty sequences at E == M*N: infeasible at M = 2, feasible at M = 3.
  v.push_back(make_batch(128, 256, 2, {256, 200, 0, 0}, {0, 0, 56, 56, 56}));
  v.push_back(make_batch(128, 256, 3, {256, 200, 0, 0}, {0, 0, 56, 56, 56}));
  // N not a multiple of P: a page straddles two chunks.
  v.push_back(make_batch(128, 300, 8, {1, 129, 500}, {0, 0, 0, 0}));
  // P = 1 and N = 1.
  v.push_back(make_batch(1, 1, 16, {3, 0, 5, 1}, {10, 11, 11, 13, 15}));
  // One huge sequence, near 2^32 in total.
  v.push_back(make_batch(1, 0x7fffffff, 3, {0xfffffff0u}, {0, 15}));
  v.push_back(make_batch(1, 0x7fffffff, 2, {0xfffffff0u}, {0, 15}));
  v.push_back(make_batch(1024, 0x7ffffc00, 3, {0x7ffffc00u, 0x7ffffc00u}, {0, 0, 0x3ff}));
  // A tiny batch with many chunks: chunk rows spread over threads.
  v.push_back(make_batch(128, 128, 4096, {100}, {0, 28}));
  v.push_back(make_batch(1, 1, 4096, {4000}, {0, 96}));
  return v;
}

TEST(GpuDifferential, EdgeCases) {
  MLAPLAN_REQUIRE_GPU();
  const std::vector<Batch> cases = edge_cases();
  PlanHarness harness;
  EXPECT_EQ(harness.run(cases, GpuKernel::fast), 0u);
  EXPECT_EQ(harness.run(cases, GpuKernel::max_port), 0u);
  EXPECT_EQ(harness.checked(), 2 * cases.size());
}

// Large batches, one per launch: tile boundaries, many tiles, B up to 4M, M up to 4096, and the
// one-block kernel with many chunk rows.
TEST(GpuDifferential, LargeBatches) {
  MLAPLAN_REQUIRE_GPU();
  std::mt19937_64 rng(4194304);
  struct Shape {
    uint32_t b, m;
    bool seed_too;  // the seed's O(B^2) prefix makes it slow past ~1M sequences
  };
  const Shape shapes[] = {{2047, 64, true},     {2048, 64, true},     {2049, 64, true},     {4096, 4096, true},
                          {4097, 1000, true},   {65536, 256, true},   {131073, 16, true},   {1048576, 16, true},
                          {1048576, 64, false}, {4194304, 16, false}, {4194304, 33, false},
                          // 256-byte-aligned ranges (2^22 cells and more) with a last tile of 3 and 369 columns
                          {262147, 17, false},  {70001, 64, false},
                          // one chunk over many tiles; 16 rows or more per block past 128 blocks
                          {1048577, 1, false},  {262144, 256, false},
                          // the one-block kernel of 1024 threads, one wave of blocks with many rows each
                          {1024, 1024, true},   {300, 4096, true}};
  PlanHarness harness;
  for (const Shape& s : shapes) {
    Batch b;
    b.page_size = s.b % 3 == 0 ? 1 : 128;
    std::vector<uint64_t> raw(s.b);
    for (auto& r : raw) r = uniform(rng, 0, 3) == 0 ? 0 : uniform(rng, 1, 700);
    set_lengths(b, raw, rng);
    const uint64_t e = padded_total(b);
    b.buffer_token_size = static_cast<uint32_t>(std::max<uint64_t>(1, (e + s.m - 1) / s.m));  // uses (about) all chunks
    b.max_chunks = s.m;
    if (!plan_shape(b).feasible) b.buffer_token_size += 1;
    SCOPED_TRACE("B=" + std::to_string(s.b) + " M=" + std::to_string(s.m));
    EXPECT_EQ(harness.run({b}, GpuKernel::fast), 0u);
    if (s.seed_too) EXPECT_EQ(harness.run({b}, GpuKernel::max_port), 0u);
  }
}

// A small sample of every path (one tile, several tiles, edge cases) for compute-sanitizer's
// memcheck and racecheck, which slow kernels down too much for the full random run.
TEST(GpuDifferential, SanitizerSample) {
  MLAPLAN_REQUIRE_GPU();
  std::mt19937_64 rng(5);
  std::vector<Batch> batches = edge_cases();
  for (int i = 0; i < 200; ++i) batches.push_back(random_batch(rng, static_cast<uint32_t>(uniform(rng, 0, 300)), 1 << 14));
  for (uint32_t b : {2048u, 2049u, 5000u}) batches.push_back(random_batch(rng, b, 1 << 20));
  PlanHarness harness;
  EXPECT_EQ(harness.run(batches, GpuKernel::max_port), 0u);  // the seed's O(B^2) prefix stops here
  batches.push_back(random_batch(rng, 600000, 1 << 21));  // past 256 tiles: a look-back over many 32-tile windows
  // One chunk row past 32 tiles: every warp looks back (look_back_wide), over one round and several.
  for (uint32_t b : {70001u, 600000u}) {
    Batch one = random_batch(rng, b, 1 << 21);
    one.max_chunks = 1;
    one.buffer_token_size = static_cast<uint32_t>(std::min<uint64_t>(0x7fffffff, std::max<uint64_t>(1, padded_total(one))));
    batches.push_back(one);
  }
  for (uint32_t b : {70001u, 270001u}) {  // tables of 2^22 cells and more: the 256-byte-aligned fill
    Batch large = random_batch(rng, b, 1 << 24);
    large.max_chunks = std::max<uint32_t>(large.max_chunks, ((1u << 22) + b - 1) / b);
    batches.push_back(large);
  }
  EXPECT_EQ(harness.run(batches, GpuKernel::fast), 0u);
}

}  // namespace
}  // namespace mlaplan::gpu_test
