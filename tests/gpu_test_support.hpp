// Shared pieces of the GPU tests: skipping where no GPU is present, checked CUDA calls (gtest's form
// of cuda_support's), device buffers and the random batch generator of the differential tests.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/cuda_support/cuda_call.hpp"
#include "mlaplan/cuda_support/device_buffer.hpp"
#include "mlaplan/plan_shape.hpp"

namespace mlaplan::gpu_test {

// Empty when a CUDA device can be used, else why not.
inline std::string gpu_skip_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device: ") + cudaGetErrorString(e);
  }
  if (count == 0) return "no CUDA device: none is visible";
  return {};
}

#define MLAPLAN_REQUIRE_GPU()                                              \
  do {                                                                     \
    const std::string skip_reason = ::mlaplan::gpu_test::gpu_skip_reason(); \
    if (!skip_reason.empty()) GTEST_SKIP() << skip_reason;                 \
  } while (0)

using cuda_support::DeviceBuffer;

// A checked CUDA call for gtest: on failure it names the call, file, line and error.
inline ::testing::AssertionResult cuda_ok(const cuda_support::CudaCall& c) {
  if (c.ok()) return ::testing::AssertionSuccess();
  cudaGetLastError();  // a non-sticky error must not fail the next check too
  return ::testing::AssertionFailure() << cuda_support::describe(c);
}
#define CUDA_OK(call) ASSERT_TRUE(::mlaplan::gpu_test::cuda_ok(MLAPLAN_CUDA_CALL(call)))

inline constexpr unsigned char kPoison = 0xAB;

inline uint64_t uniform(std::mt19937_64& rng, uint64_t lo, uint64_t hi) {  // inclusive
  return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
}

// Fills lengths (cache + input, split at random) and offsets with a random base.
inline void set_lengths(Batch& batch, const std::vector<uint64_t>& raw, std::mt19937_64& rng) {
  const size_t b = raw.size();
  batch.cache_lengths.assign(b, 0);
  std::vector<uint32_t> input(b);
  uint64_t input_total = 0;
  for (size_t i = 0; i < b; ++i) {
    const uint64_t in = raw[i] == 0 ? 0 : uniform(rng, 0, raw[i]);
    input[i] = static_cast<uint32_t>(in);
    batch.cache_lengths[i] = static_cast<uint32_t>(raw[i] - in);
    input_total += in;
  }
  // The first offset need not be 0; leave room so the last one still fits in 32 bits.
  const uint64_t room = UINT32_MAX - input_total;
  uint64_t base = uniform(rng, 0, 3) == 0 ? uniform(rng, 0, room) : uniform(rng, 0, std::min<uint64_t>(room, 1000));
  batch.input_row_offsets.resize(b + 1);
  batch.input_row_offsets[0] = static_cast<uint32_t>(base);
  for (size_t i = 0; i < b; ++i) {
    base += input[i];
    batch.input_row_offsets[i + 1] = static_cast<uint32_t>(base);
  }
}

inline uint64_t padded_total(const Batch& batch) {
  uint64_t e = 0;
  for (uint32_t i = 0; i < batch.batch_size(); ++i) e += batch.padded_length(i);
  return e;
}

// A random batch of `b` sequences, exercising the edge cases of semantics.md: empty and zero
// lengths, N not a multiple of P, P = 1, one huge sequence, totals near 2^32, exact multiples of
// N with trailing empty sequences, and max_chunks right at, one past or above what is needed.
// Keeps max_chunks <= 4096 and max_chunks * (b + 1) <= max_cells.
inline Batch random_batch(std::mt19937_64& rng, uint32_t b, uint64_t max_cells) {
  Batch batch;
  static const uint32_t kPages[] = {1, 1, 2, 16, 64, 128, 128, 128, 256, 1024};
  batch.page_size = uniform(rng, 0, 4) == 0 ? static_cast<uint32_t>(uniform(rng, 1, 1024)) : kPages[uniform(rng, 0, 9)];
  const uint64_t p = batch.page_size;

  std::vector<uint64_t> raw(b, 0);
  const int mode = static_cast<int>(uniform(rng, 0, 7));
  for (uint32_t i = 0; i < b; ++i) {
    switch (mode) {
      case 0: raw[i] = 0; break;                                                    // all empty
      case 1: raw[i] = uniform(rng, 0, 2) == 0 ? 0 : uniform(rng, 1, 3 * p); break;  // some empty
      case 2: raw[i] = uniform(rng, 0, 4 * p); break;
      case 3: raw[i] = uniform(rng, 1, 5000); break;
      case 4: raw[i] = uniform(rng, 0, 1) * p * uniform(rng, 1, 4); break;  // exact pages
      default: raw[i] = uniform(rng, 0, 600); break;
    }
  }
  // Room for every padded length to fit in 32 bits in total.
  const uint64_t limit = UINT32_MAX;
  if (b > 0 && uniform(rng, 0, 9) == 0) {  // one huge sequence, sometimes near 2^32 in total
    uint64_t used = 0;
    for (uint64_t r : raw) used += (r + p - 1) / p * p;
    const uint64_t free_rows = used + p < limit ? (limit - used) / p * p - p : 0;
    if (free_rows > 0) raw[uniform(rng, 0, b - 1)] += uniform(rng, 0, 1) ? free_rows : uniform(rng, 0, free_rows);
  }
  set_lengths(batch, raw, rng);
  uint64_t e = padded_total(batch);

  // N: often a multiple of P, often not; small enough that several chunks are used.
  uint64_t n;
  switch (uniform(rng, 0, 4)) {
    case 0: n = p * uniform(rng, 1, 64); break;
    case 1: n = uniform(rng, 1, 4096); break;
    case 2: n = std::max<uint64_t>(1, e / uniform(rng, 1, 40) + uniform(rng, 0, 3)); break;
    case 3: n = uniform(rng, 1, 600); break;
    default: n = uniform(rng, 1, 0x7fffffff); break;
  }
  n = std::min<uint64_t>(std::max<uint64_t>(n, 1), 0x7fffffff);
  // A whole number of chunks followed by empty sequences: the "start at the end" case.
  if (b >= 2 && n % p == 0 && uniform(rng, 0, 7) == 0) {
    const uint32_t trailing = static_cast<uint32_t>(uniform(rng, 1, std::min<uint32_t>(b - 1, 3)));
    const uint32_t last = b - 1 - trailing;
    for (uint32_t i = last + 1; i < b; ++i) raw[i] = 0;
    uint64_t before = 0;
    for (uint32_t i = 0; i < last; ++i) before += (raw[i] + p - 1) / p * p;
    const uint64_t own = (raw[last] + p - 1) / p * p;
    const uint64_t pad = (n - (before + own) % n) % n;  // a multiple of P since P | N
    if (before + own + pad <= limit) {
      raw[last] = own + pad;
      set_lengths(batch, raw, rng);
      e = padded_total(batch);
    }
  }
  const uint64_t cols = uint64_t{b} + 1;
  const uint64_t m_cap = std::max<uint64_t>(1, std::min<uint64_t>(4096, max_cells / cols));
  // Too many chunks for the cap: widen the buffer until the batch needs fewer of them.
  if ((e + n - 1) / n + 1 > m_cap) {
    const uint64_t chunks = m_cap > 1 ? m_cap - 1 : 1;
    n = std::min<uint64_t>(0x7fffffff, std::max<uint64_t>(n, (e + chunks - 1) / chunks));
  }
  batch.buffer_token_size = static_cast<uint32_t>(n);
  batch.max_chunks = 1;
  const uint64_t need = plan_shape(batch).min_max_chunks;
  uint64_t m;
  switch (uniform(rng, 0, 5)) {
    case 0: case 1: m = need; break;                               // right at capacity
    case 2: m = need > 1 ? need - 1 : need; break;                 // one past capacity
    case 3: m = need + uniform(rng, 0, 3); break;
    default: m = uniform(rng, 1, std::max<uint64_t>(1, std::min<uint64_t>(m_cap, 2 * need + 2))); break;
  }
  batch.max_chunks = static_cast<uint32_t>(std::clamp<uint64_t>(m, 1, m_cap));
  return batch;
}

}  // namespace mlaplan::gpu_test
